"""The Pulumi program's wiring: the providers, what only the cloud and the running cluster can say
(read before anything else is registered), and the function that builds a stack. The AWS cloud side
itself is `components/aws_cloud.py`, `Kiam`'s default.

Import the modules themselves (`program.stack`, `program.providers`, ...): the real-engine tests use
`program.stack` and `program.kubernetes` without the AWS and TLS SDKs that the others import.
"""
