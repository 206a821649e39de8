-- Loaded by bench/api_load.py into wrk: prints the run's figures as one JSON line.
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests": %d, "duration_us": %d, "bytes": %d, "errors": %d, "p50_us": %d, "p99_us": %d}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
