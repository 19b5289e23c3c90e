"""What a cancelled or killed `pulumi up` leaves behind (a lock, pending operations, objects the
state does not know) and how it is recovered, by the fleet (`tools.fleet up`) and the sandbox
alike. docs/operations.md, "A deploy was cancelled or killed", is the operator's side of it."""
