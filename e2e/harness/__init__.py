"""Drives the real toolchain: the control plane (kwokctl), the Pulumi CLI, the cluster's API."""
