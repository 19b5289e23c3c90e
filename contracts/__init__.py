"""The facts the rest of the project shares, at the bottom of the house: what AWS, EKS, Kubernetes
and kiam define (each cited where it is written, each spelled out by a contract test in
`tests/contracts/`), and the names the program gives its own objects. Nothing here imports any
other package of the project, so every layer above may depend on it."""
