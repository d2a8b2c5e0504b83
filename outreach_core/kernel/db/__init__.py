"""The database: tables (`tables/`), the engine, Alembic migrations (`migrations/`), column types."""
