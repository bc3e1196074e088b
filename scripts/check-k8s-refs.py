#!/usr/bin/env python3
"""What schemas cannot see in rendered manifests (kustomize's output, one file per
kustomization, given together): names that must match across objects and the
detshare settings the examples show.

- a pod template's volumeMounts name its volumes; configMap volumes and envFrom name
  ConfigMaps of the render (kube-root-ca.crt is every namespace's own);
- a path under a configMap volume's mount in a container's command or an exec probe
  is a key of that ConfigMap;
- a Service selects some pod template and its targetPorts are that template's
  container port names; a ServiceMonitor selects a Service and scrapes its ports;
- ClusterRoles and Roles grant `get` on pods and nothing else (least privilege);
- detshare.io/* pod annotations are known ones with valid values.
Prints one line per problem; exits 1 when there is any."""
import re
import sys

import yaml

ANNOTATIONS = {
    "detshare.io/class": lambda v: v in ("latency", "best-effort"),
    "detshare.io/slo-ms": lambda v: (re.fullmatch(r"[0-9]{1,7}(\.[0-9]{1,3})?", v) is not None
                                     and 0 < float(v) <= 3600000),
    "detshare.io/memory": lambda v: re.fullmatch(r"[1-9][0-9]*([KMGT]i?B?)?", v) is not None,
    "detshare.io/sm-share": lambda v: v.isdigit() and 1 <= int(v) <= 100,
    "detshare.io/kernel-time": lambda v: v.isdigit() and 1 <= int(v) <= 100,
}
CLUSTER_CONFIGMAPS = {"kube-root-ca.crt"}


def pod_templates(objs):
    for o in objs:
        kind, spec = o.get("kind"), o.get("spec") or {}
        if kind == "Pod":
            yield o, o.get("metadata") or {}, spec
        elif kind in ("Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job"):
            t = spec.get("template") or {}
            yield o, t.get("metadata") or {}, t.get("spec") or {}
        elif kind == "CronJob":
            t = ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}
            yield o, t.get("metadata") or {}, t.get("spec") or {}


def name(o):
    return "%s/%s" % (o.get("kind"), (o.get("metadata") or {}).get("name"))


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def check_pod(o, meta, spec, configmaps, problems):
    vols = {v["name"]: v for v in spec.get("volumes") or []}
    containers = (spec.get("initContainers") or []) + (spec.get("containers") or [])
    for v in vols.values():
        cm = (v.get("configMap") or {}).get("name")
        srcs = [s.get("configMap", {}).get("name")
                for s in (v.get("projected") or {}).get("sources") or []]
        for n in [cm] + srcs:
            if n and n not in configmaps and n not in CLUSTER_CONFIGMAPS:
                problems.append("%s: volume %s names no ConfigMap %s" % (name(o), v["name"], n))
    for c in containers:
        for e in c.get("envFrom") or []:
            n = (e.get("configMapRef") or {}).get("name")
            if n and n not in configmaps:
                problems.append("%s: container %s: envFrom names no ConfigMap %s"
                                % (name(o), c["name"], n))
        mounts = {}
        for m in c.get("volumeMounts") or []:
            if m["name"] not in vols:
                problems.append("%s: container %s mounts no volume %s"
                                % (name(o), c["name"], m["name"]))
            else:
                mounts[m["mountPath"].rstrip("/")] = vols[m["name"]]
        argv = (c.get("command") or []) + (c.get("args") or [])
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            argv += ((c.get(probe) or {}).get("exec") or {}).get("command") or []
        for arg in argv:
            for path, v in mounts.items():
                cm = (v.get("configMap") or {}).get("name")
                if cm in configmaps and isinstance(arg, str) and arg.startswith(path + "/"):
                    key = arg[len(path) + 1:]
                    if key not in (configmaps[cm].get("data") or {}):
                        problems.append("%s: container %s runs %s, which ConfigMap %s lacks"
                                        % (name(o), c["name"], arg, cm))
    for k, v in (meta.get("annotations") or {}).items():
        if not k.startswith("detshare.io/"):
            continue
        ok = ANNOTATIONS.get(k)
        if ok is None:
            problems.append("%s: unknown annotation %s" % (name(o), k))
        elif not ok(str(v)):
            problems.append("%s: annotation %s: bad value %r" % (name(o), k, v))


def check(objs):
    problems = []
    configmaps = {(o["metadata"]["name"]): o for o in objs if o.get("kind") == "ConfigMap"}
    templates = list(pod_templates(objs))
    for o, meta, spec in templates:
        check_pod(o, meta, spec, configmaps, problems)
    services = [o for o in objs if o.get("kind") == "Service"]
    for s in services:
        sel = (s.get("spec") or {}).get("selector") or {}
        chosen = [t for t in templates if selects(sel, t[1].get("labels") or {})]
        if not chosen:
            problems.append("%s selects no pod template" % name(s))
            continue
        ports = {p.get("name") for _, _, spec in chosen
                 for c in spec.get("containers") or [] for p in c.get("ports") or []}
        for p in s["spec"].get("ports") or []:
            t = p.get("targetPort")
            if isinstance(t, str) and t not in ports:
                problems.append("%s: targetPort %s is no container port's name" % (name(s), t))
    for m in (o for o in objs if o.get("kind") == "ServiceMonitor"):
        sel = ((m.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        chosen = [s for s in services
                  if selects(sel, (s.get("metadata") or {}).get("labels") or {})]
        if not chosen:
            problems.append("%s selects no Service" % name(m))
            continue
        ports = {p.get("name") for s in chosen for p in s["spec"].get("ports") or []}
        for e in m["spec"].get("endpoints") or []:
            if e.get("port") not in ports:
                problems.append("%s: endpoint port %s is no port of its Service"
                                % (name(m), e.get("port")))
    for r in (o for o in objs if o.get("kind") in ("ClusterRole", "Role")):
        for rule in r.get("rules") or []:
            if (rule.get("apiGroups") != [""] or rule.get("resources") != ["pods"]
                    or rule.get("verbs") != ["get"] or rule.get("resourceNames")
                    or rule.get("nonResourceURLs")):
                problems.append("%s grants more than get on pods: %s" % (name(r), rule))
    return problems


def main(paths):
    problems = []
    for path in paths:
        with open(path) as f:
            objs = [o for o in yaml.safe_load_all(f) if o]
        problems += ["%s: %s" % (path, p) for p in check(objs)]
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
