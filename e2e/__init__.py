"""The real-engine suite: the program's own components on the real Pulumi engine and a real
Kubernetes control plane (kwok nodes), with stand-ins only for AWS and pulumi-tls."""
