"""Writers of a QuantPlan (registry keyed by mode): static QDQ, dynamic, weight-only, MX."""
