"""What people read, made from a results document: the tables `ways run` prints last (terminal),
report.md (markdown), the figures (figures) and the self-contained HTML page (page)."""
