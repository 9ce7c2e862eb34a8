-- The reference band of each canonical GPU: the median USD per GPU-hour of its open offers
-- across every provider (the last good data of each), and how many offers that median is of.
SELECT gpu_id, median(price_usd_per_gpu_hour) AS median_usd, count(*) AS offers
FROM recent_versions
WHERE valid_to IS NULL AND gpu_id IS NOT NULL
GROUP BY gpu_id;
