-- The stamp of what a facts table is built from (inputs.sql): per input, its row count and an
-- order-independent hash of every column of every row, folded into one number.
WITH {inputs},
folded AS (
    SELECT count(*) AS n, bit_xor(hash(*COLUMNS(*))) AS h FROM offer_inputs
    UNION ALL
    SELECT count(*), bit_xor(hash(*COLUMNS(*))) FROM profile_inputs
    UNION ALL
    SELECT count(*), bit_xor(hash(*COLUMNS(*))) FROM mode_inputs
)
SELECT CAST(hash(list(n ORDER BY n, h), list(h ORDER BY n, h)) AS VARCHAR) AS stamp FROM folded;
