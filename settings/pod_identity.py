"""`kiam:podIdentityAgent`: the EKS add-on that serves Pod Identity credentials on the nodes."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from kiam_eks.settings.base import Model, matching

# DescribeAddonVersions' addonVersion, e.g. v1.3.4-eksbuild.1.
AddonVersion = Annotated[
    str,
    matching(r"v\d+\.\d+\.\d+-eksbuild\.\d+", "an EKS add-on version such as v1.3.4-eksbuild.1"),
]


class PodIdentityAgentSettings(Model):
    """Only read while an application is served by Pod Identity (`servedBy` kiam+podIdentity or
    podIdentity): the `eks-pod-identity-agent` add-on must then run on the nodes its pods use."""

    manage_addon: bool = Field(
        default=False,
        description="Install and own the `eks-pod-identity-agent` add-on (kept on the nodes if "
        "the stack later drops it: removing it never takes the agent from running pods). Until "
        "the stack has installed it, the program checks at plan time, before changing anything, "
        "that EKS lists no such add-on on the cluster (EKS refuses to create a second) and stops "
        "with the way out if it does: import it into the stack, or leave this off. Off: the "
        "program only checks, the same way, that EKS lists the add-on on the cluster, and stops "
        "with a message if not.",
    )
    addon_version: AddonVersion | None = Field(
        default=None,
        description="The add-on version to install; only with `manageAddon: true` (refused "
        "otherwise: the program installs nothing to give it to). EKS's default for the cluster's "
        "Kubernetes version when unset.",
    )

    @model_validator(mode="after")
    def _check(self) -> PodIdentityAgentSettings:
        if self.addon_version is not None and not self.manage_addon:
            # A version the program would never install: the cluster's own add-on is only checked.
            raise ValueError(
                f"addonVersion {self.addon_version} is used only when manageAddon is true: set "
                "manageAddon: true to install that version with the stack, or remove addonVersion"
            )
        return self
