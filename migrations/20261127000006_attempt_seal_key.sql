-- The key that seals a retry's attempt count (docs/hostile-input.md "Properties decide
-- nothing"). The consumer gives a premature message up after AMQP_MAX_ATTEMPTS deliveries through
-- its retry path; the count travels on the message as `x-attempt`, which any publisher can also
-- set. A retry therefore carries `x-attempt-seal` too, an HMAC-SHA256 of the count, the message
-- id and the body under this key, and a count without a valid seal is not read. Every instance
-- reads the one key here, so a retry sealed by one instance counts on another.
--
-- 256 random bits from two version-4 UUIDs (gen_random_uuid() draws from the server's strong
-- random source; 244 of each UUID's bits are random), written once.
--
-- An expand step: a new table, which 0.2.0 (whose newest migration is 20261126000001) neither
-- reads nor writes. It counts x-attempt as before, unsealed; the upgrading page says what that
-- means for a message that is mid-retry during an upgrade.
CREATE TABLE service_keys (
    name       text        NOT NULL,
    secret     bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT service_keys_pkey PRIMARY KEY (name),
    CONSTRAINT service_keys_secret_length CHECK (octet_length(secret) >= 32)
);

INSERT INTO service_keys (name, secret)
VALUES ('amqp-attempt-seal', uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()));

INSERT INTO schema_compatibility (migration, oldest_compatible, release)
VALUES (20261127000006, 20261126000001, '0.3.0');
