"""The Pulumi program's wiring: providers, the AWS cloud side, and the function that builds a stack.

Import the modules themselves (`program.stack`, `program.providers`, ...): the real-engine tests use
`program.stack` and `program.kubernetes` without the AWS and TLS SDKs that the others import.
"""
