"""The costs app changes nothing a user asks for: estimates are reads (:mod:`costs.selectors`), and the only rows it
writes are the Price List's answers that :mod:`costs.prices` caches while reading."""
