"""Pure planning: block tables, the choice of b, what an index finds, all pairs in memory, Citus costs."""
