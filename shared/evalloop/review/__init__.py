"""Human review: the review HTTP JSON API and the golden-set publication outbox
(``docs/review.md``)."""
