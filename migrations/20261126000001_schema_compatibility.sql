-- Which releases may still run on this schema (docs/operations/upgrading.md "Migrations both
-- releases survive"). During a rolling upgrade the previous release keeps running, and may
-- restart, on the schema the new one migrated; after a rollback it runs there for good. A
-- release that finds a migration it does not know in `_sqlx_migrations` starts only if that
-- migration has a row here naming a migration it knows: `oldest_compatible` is the oldest
-- migration a release must know to keep working with `migration` applied.
--
-- Every migration from this one on declares itself here, in the same file (tests/upgrade checks
-- it). This one only adds a table, which no earlier release reads; but releases before 0.2.0
-- (whose newest migration is 20261124000001) do not look here, and refuse any migration they do
-- not know: 0.2.0 is the first release a later one can be rolled back to.
CREATE TABLE schema_compatibility (
    migration bigint PRIMARY KEY,
    oldest_compatible bigint NOT NULL,
    CHECK (oldest_compatible < migration)
);

INSERT INTO schema_compatibility (migration, oldest_compatible)
VALUES (20261126000001, 20261124000001);
