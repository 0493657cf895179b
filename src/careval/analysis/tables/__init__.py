"""The paper's tables (Appendix E's 7-20, Table 6) as files and report pages, and every table the report draws."""
