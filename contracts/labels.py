"""Kubernetes labels of kiam's objects, built in one place so selectors can never drift apart."""

from __future__ import annotations

from typing import Literal

Role = Literal["server", "agent"]

NAME = "kiam"
HOSTNAME_TOPOLOGY = "kubernetes.io/hostname"
ZONE_TOPOLOGY = "topology.kubernetes.io/zone"
# EKS puts this label on every node of a managed node group; its value is the group's name.
NODE_GROUP_LABEL = "eks.amazonaws.com/nodegroup"
# kiam's pod annotation (a role name, a path relative to --role-base-arn, or an ARN), its
# namespace annotation (a regexp of the role ARNs the namespace's pods may assume), and IRSA's
# service-account annotation (a role ARN).
ROLE_ANNOTATION = "iam.amazonaws.com/role"
PERMITTED_ANNOTATION = "iam.amazonaws.com/permitted"
# On a namespace whose permitted annotation this stack took over: the value it found there, which
# it gives back (components/namespace_permissions.py).
EXISTING_PERMITTED_ANNOTATION = "kiam.pulumi.io/existing-permitted"
IRSA_ANNOTATION = "eks.amazonaws.com/role-arn"
# pulumi-kubernetes applies an object carrying this with force: it takes the fields it sets from
# the field managers that set them before (taking over what another installer created).
PATCH_FORCE_ANNOTATION = "pulumi.com/patchForce"
# On the server pod template while the server certificate also names the address the running
# agents still dial (transitions/): its appearing and going restarts the servers onto
# the certificate, instead of waiting for the kubelet to refresh the mounted Secret.
PREVIOUS_NAMES_ANNOTATION = "kiam.pulumi.io/previous-server-names"
# The recommended label naming the application (Kubernetes, "Recommended Labels"): kiam's objects
# carry it with NAME, and the guarantees recognise them by it.
NAME_LABEL = "app.kubernetes.io/name"
# The Secret type of a certificate and its key (Kubernetes, "Secrets: TLS secrets").
TLS_SECRET_TYPE = "kubernetes.io/tls"


def selector_labels(role: Role) -> dict[str, str]:
    """The labels a selector matches: server pods and agent pods never match each other's."""
    return {NAME_LABEL: NAME, "app.kubernetes.io/component": role}


def object_labels(role: Role) -> dict[str, str]:
    """Labels for the metadata of an object that does not run the image: the selector plus
    bookkeeping, but no version, so an image bump leaves RBAC, Services and the PDB unchanged
    and a reviewer's preview shows only what actually changes."""
    return {**selector_labels(role), **install_labels()}


def install_labels() -> dict[str, str]:
    """Labels for an object of the install as a whole (the alert rules): no component."""
    return {
        NAME_LABEL: NAME,
        "app.kubernetes.io/part-of": NAME,
        "app.kubernetes.io/managed-by": "pulumi",
    }


def workload_labels(role: Role, image: str) -> dict[str, str]:
    """Labels for a Deployment or DaemonSet and its pod template: `object_labels` and the version
    of the image they run."""
    return {**object_labels(role), "app.kubernetes.io/version": image_version(image)}


def image_version(image: str) -> str:
    """The tag of a pinned image, or a digest prefix, as a valid label value."""
    if "@sha256:" in image:
        return "sha256-" + image.split("@sha256:", 1)[1][:12]
    return image.rsplit(":", 1)[1][:63]
