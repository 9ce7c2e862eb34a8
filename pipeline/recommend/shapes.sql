-- The distinct placements among the current offers a recommendation may use: machine shape
-- (GPU × GPUs per node) and, where the offer can span machines, its fabric, the fabric's Gb/s
-- and the cluster size. The sizing model runs once per placement, not once per offer.
WITH {offers}
SELECT DISTINCT
    gpu_id,
    CAST(gpu_count AS INTEGER) AS gpus_per_node,
    fabric,
    fabric_gbps,
    max_nodes
FROM offers
WHERE gpu_id IS NOT NULL
  AND gpu_count >= 1 AND gpu_count = floor(gpu_count)
ORDER BY ALL;
