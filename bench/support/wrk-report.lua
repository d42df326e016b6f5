-- Loaded by bench/support/wrk.ts with `wrk -s`. It only defines done(), which wrk calls once
-- after the run, so it adds no work per request (request()/response() hooks would). It prints
-- one machine-readable line; latencies are in microseconds. errors.status counts responses
-- with a status above 399 (wrk's own definition of a non-2xx/3xx answer).
done = function(summary, latency, requests)
  io.write(string.format(
    'WRK_REPORT {"requests":%d,"duration_us":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},"latency_us":{"mean":%.2f,"p50":%d,"p90":%d,"p99":%d,"max":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.status, summary.errors.timeout,
    latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
