"""Policies: pluggable decisions (ABR, lmkd, WAM, …) behind small protocols and registries."""
