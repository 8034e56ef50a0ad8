-- Mixed endpoint, run inside the httpd worker by mod_lua (the way mod_php
-- runs PHP): it first sums n pseudo-random numbers (CPU), then sleeps ms
-- milliseconds (a backend's wait: the worker stays held, the CPU is free).
-- No child process, so nothing to reap when the request ends.
function handle(r)
    local args = r:parseargs()
    local n = math.min(tonumber(args.n or "0") or 0, 5000000)
    local ms = math.min(tonumber(args.ms or "0") or 0, 60000)
    local sum = 0
    for _ = 1, n do
        sum = sum + math.random()
    end
    r.usleep(ms * 1000)
    r.content_type = "text/plain"
    r:puts(string.format("summed %d, slept %d ms\n", n, ms))
    return apache2.OK
end
