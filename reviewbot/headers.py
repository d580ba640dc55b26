"""HTTP names the review side and the server side agree on (without importing each other)."""

# one opaque value per review on every request of it: the balancers hash on it so that a
# review's chunks and passes land on the replica that holds its prompt prefix in cache
AFFINITY_HEADER = "X-Reviewbot-Review"
