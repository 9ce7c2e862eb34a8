-- The placement facts of the current offers of one provider whose key starts with $key, for
-- `gpuscout estimate --offer PROVIDER:KEY`: the GPU, the GPUs of one machine and what joins
-- them, and the network between machines. An exact key comes first.
SELECT offer_key, gpu_id, gpu_count, gpus_per_machine, interconnect, network, network_gbps
FROM current_offers
WHERE provider = $provider AND starts_with(offer_key, $key)
ORDER BY offer_key <> $key, offer_key
LIMIT 6
