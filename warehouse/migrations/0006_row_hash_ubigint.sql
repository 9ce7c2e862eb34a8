-- The change hash is stored as the UBIGINT that hash() returns instead of its decimal text
-- (bench: writing 1 M hashes as text cost about a quarter of a first load's CPU: a unique
-- string per row to format and compress, against 8 bytes). Every stored hash is that text
-- since 0004 rehashed them, so the cast keeps each value: no refresh sees a spurious change.
ALTER TABLE offer_versions ALTER row_hash SET DATA TYPE UBIGINT USING CAST(row_hash AS UBIGINT);
