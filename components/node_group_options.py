"""How the server node group is changed: the resource options the program registers it with.

One place for both cloud sides: `components/node_group.py` registers the EKS managed node group
with them, and the real-engine suite's stand-in group (e2e/standins/nodes.py) takes the same
options and replaces itself on exactly the arguments they name (plus those EKS itself replaces a
group for, `contracts.eks_node_group.FORCE_NEW`), applying every other change to its running
Nodes as EKS would. So the proof on the real engine depends on these options, not on the
contract that says what they should be: without them, a taint change reaches the running Nodes
and the servers on them, on the real engine as on EKS. Guarantee 9 judges what is registered
against that contract (`REPLACE_ON_CHANGES`), at every gate.

No cloud SDK here: the e2e program, which has none, imports it.
"""

from __future__ import annotations

import pulumi

from kiam_eks.contracts.eks_node_group import REPLACE_ON_CHANGES


def replacement_options() -> pulumi.ResourceOptions:
    """Create-before-delete (the default, said explicitly), and a replacement instead of the
    in-place path EKS would take for a new launch template version, a Kubernetes version, an AMI
    release or a taint (contracts/eks_node_group.py says why each)."""
    return pulumi.ResourceOptions(
        # The server Deployment moves to the new group and is Ready before the old is drained.
        delete_before_replace=False,
        replace_on_changes=list(REPLACE_ON_CHANGES),
    )
