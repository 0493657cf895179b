"""The report's pages: the paper's figures, the comparisons', the jury's, the studies' and CareQA's pages, drawn
from the tables the analysis computed (careval.analysis.tables.report_tables)."""
