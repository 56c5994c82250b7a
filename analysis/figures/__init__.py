"""Plotly figures shared by the pages and the reports, one module per kind of chart; they
take the analyses' frames and return figures, nothing else."""
