-- What an operator said when acting on dead letters: a discard's reason, say (docs/operations/
-- dead-letters.md; the console asks for one). An expand step: a nullable column, which 0.2.0
-- (whose newest migration is 20261126000001) neither writes nor reads. Its bound is added NOT
-- VALID: it holds for every row written from now on, and the rows before it have no note; a
-- later migration may VALIDATE it (in a transaction of its own, which does not block writes).
ALTER TABLE dead_letter_actions ADD COLUMN note text;

ALTER TABLE dead_letter_actions
    ADD CONSTRAINT dead_letter_actions_note_bounded CHECK (octet_length(note) <= 2048) NOT VALID;

INSERT INTO schema_compatibility (migration, oldest_compatible, release)
VALUES (20261126000003, 20261126000001, '0.3.0');
