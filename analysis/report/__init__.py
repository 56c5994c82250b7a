"""The run report: document.py builds the JSON document, sections.py what every format
shows, html.py / md.py / pdf.py lay it out, charts.py draws its figures; `python -m
analysis.report RUN --format html|md|json|pdf` (__main__.py) writes one."""
