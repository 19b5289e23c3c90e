"""The CrossGuard policy pack: `pulumi preview --policy-pack policy`."""
