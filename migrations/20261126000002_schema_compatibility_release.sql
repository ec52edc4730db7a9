-- The release that added each migration, so that a release refusing a schema it cannot run on
-- names the release to run instead of a migration number (docs/operations/upgrading.md
-- "Migrations both releases survive"). An expand step: a nullable column, which 0.2.0 (whose
-- newest migration is 20261126000001) neither reads nor writes.
ALTER TABLE schema_compatibility ADD COLUMN release text;

UPDATE schema_compatibility SET release = '0.2.0' WHERE migration = 20261126000001;

INSERT INTO schema_compatibility (migration, oldest_compatible, release)
VALUES (20261126000002, 20261126000001, '0.3.0');
