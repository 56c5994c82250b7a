"""FLOPs and bytes of PyTorch ops from their recorded shapes (analysis/work/models.py says
how); the work models of each op family live beside it."""

from analysis.work.models import MODELS, WORK_COLUMNS, Work, op_work, work_table

__all__ = ["MODELS", "WORK_COLUMNS", "Work", "op_work", "work_table"]
