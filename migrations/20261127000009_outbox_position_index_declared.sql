-- Declares the index built by the previous migration, and this migration, which does nothing
-- else: both leave 0.2.0 working.
INSERT INTO schema_compatibility (migration, oldest_compatible, release)
VALUES (20261127000008, 20261126000001, '0.3.0'), (20261127000009, 20261126000001, '0.3.0');
