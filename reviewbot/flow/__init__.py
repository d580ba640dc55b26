"""The review flow above the adapters: which settings a review trusts, which forge, the
head tree and context, the posting pipeline, and the service the entry points call."""
