"""The store: schema, Parquet lake and DuckDB access. Imports no other project layer."""
