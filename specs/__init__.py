"""What the components create, as pure data computed from the settings: kiam's command lines
(`kiam_flags`), IAM policy documents and role ARNs (`iam_policies`), the Prometheus alert rules
(`alert_rules`), and how a running install's objects are taken over (`takeover`). No resource is
registered here: the components in `components/` turn these into resources, and the tests read
them directly."""
