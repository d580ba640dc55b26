"""HTTP names the server side shares with the review client, which it does not import
(tests/test_headers.py holds the two spellings equal)."""

# one opaque value per review on every request of it: the balancers hash on it so that a
# review's chunks and passes land on the replica that holds its prompt prefix in cache
AFFINITY_HEADER = "X-Reviewbot-Review"
# the same header as nginx names it in a config
AFFINITY_NGINX_VAR = "$http_" + AFFINITY_HEADER.lower().replace("-", "_")
