"""Subscripts used on shared arrays, classified as thread-derived (see model.Index)."""

from __future__ import annotations


def attach_indices(ctx, sns):
    return sns
