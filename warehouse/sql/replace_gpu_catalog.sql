-- $1 = path of pipeline/data/gpus.csv; read by DuckDB's own CSV reader.
INSERT OR REPLACE INTO gpu_catalog BY NAME
SELECT * FROM read_csv($1, header = true, all_varchar = false,
                       types = {'compute_capability': 'VARCHAR'});
