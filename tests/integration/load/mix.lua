-- mix.lua - wrk request mix for test_load.py: hits on a hot set, misses on a cold set that
-- churns through a small cache, and pass-through listings. Paths come from the environment.
local bucket = os.getenv("LOAD_BUCKET")
local hot = tonumber(os.getenv("LOAD_HOT"))
local cold = tonumber(os.getenv("LOAD_COLD"))
local prefix = os.getenv("LOAD_PREFIX")
local n = 0

function setup(thread)
    thread:set("seed", math.random(1, 1000000))
end

function init(args)
    math.randomseed(seed)
end

function request()
    n = n + 1
    local r = math.random(100)
    local path
    if r <= 80 then
        path = string.format("/%s/%shot-%05d", bucket, prefix, math.random(0, hot - 1))
    elseif r <= 95 then
        path = string.format("/%s/%scold-%05d", bucket, prefix, math.random(0, cold - 1))
    else
        path = string.format("/%s?list-type=2&max-keys=5&prefix=%s", bucket, prefix)
    end
    return wrk.format("GET", path)
end

local failures = 0
function response(status, headers, body)
    if status ~= 200 then
        failures = failures + 1
        if failures <= 5 then
            io.stderr:write("unexpected status " .. status .. "\n")
        end
    end
end
