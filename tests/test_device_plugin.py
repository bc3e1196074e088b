#!/usr/bin/env python3
"""detshare-device-plugin against a fake kubelet, a fake API server and a sim server.

The fake kubelet serves Registration on kubelet.sock and PodResources on a socket of its
own, and calls the plugin's DevicePlugin service as the kubelet would.  The paths come
from the environment (tests/CMakeLists.txt): DSK_PY (the generated stubs), DSK_PLUGIN,
DS_SERVER_BIN, DS_CTL_BIN, DSK_TENANT (hello_tenant), DSK_SOAK (soak_tenant, may be
empty), DSK_LIB_DIR (the directory of detshare's libcuda.so.1).

On a GPU, DSK_DEVICE=cuda runs the server on the GPU instead of the sim, and DSK_TORCH (a
command line, e.g. "python3 bench/torch_determinism.py resnet") adds a check that a
PyTorch tenant given exactly Allocate's environment prints what it prints natively.
"""
import contextlib
import http.server
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request
from concurrent import futures

sys.path.insert(0, os.environ["DSK_PY"])
import grpc  # noqa: E402
from deviceplugin.v1beta1 import api_pb2 as dp  # noqa: E402
from deviceplugin.v1beta1 import api_pb2_grpc as dp_grpc  # noqa: E402
from podresources.v1 import api_pb2 as pr  # noqa: E402
from podresources.v1 import api_pb2_grpc as pr_grpc  # noqa: E402

RESOURCE = "detshare.io/gpu"
SA_TOKEN = "sa-token-for-the-test"


class Registration(dp_grpc.RegistrationServicer):
    def __init__(self):
        self.requests = queue.Queue()

    def Register(self, request, context):
        self.requests.put(request)
        return dp.Empty()


class PodResources(pr_grpc.PodResourcesListerServicer):
    """Pods ("NS/NAME") and the device IDs each holds, as the test sets them."""

    def __init__(self):
        self.pods = {}
        self.lock = threading.Lock()

    def List(self, request, context):
        res = pr.ListPodResourcesResponse()
        with self.lock:
            for pod, ids in self.pods.items():
                ns, name = pod.split("/")
                p = res.pod_resources.add(namespace=ns, name=name)
                c = p.containers.add(name="main")
                c.devices.add(resource_name=RESOURCE, device_ids=ids)
        return res

    def set(self, pods):
        with self.lock:
            self.pods = dict(pods)


class FakeApi(http.server.BaseHTTPRequestHandler):
    """GET /api/v1/namespaces/NS/pods/NAME: a pod whose annotations the test sets."""

    annotations = {}
    asked = []

    def do_GET(self):
        parts = self.path.strip("/").split("/")
        FakeApi.asked.append(self.path)
        if self.headers.get("Authorization") != "Bearer " + SA_TOKEN:
            self.send_response(401)
            self.end_headers()
            return
        if len(parts) != 6 or parts[:3] != ["api", "v1", "namespaces"] or parts[4] != "pods":
            self.send_response(404)
            self.end_headers()
            return
        pod = {"kind": "Pod", "metadata": {"namespace": parts[3], "name": parts[5],
               "annotations": FakeApi.annotations.get(parts[3] + "/" + parts[5], {})}}
        body = json.dumps(pod).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def wait_for(pred, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = pred()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError("timed out after %.1f s waiting for %s" % (timeout, what))


class DevicePluginTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.logs = []
        cls.dir = tempfile.mkdtemp(prefix="dsk-")
        cls.kubelet_dir = os.path.join(cls.dir, "device-plugins")
        os.makedirs(cls.kubelet_dir)
        cls.sock_dir = os.path.join(cls.dir, "gpu0")
        os.makedirs(cls.sock_dir)
        cls.sock = os.path.join(cls.sock_dir, "ds.sock")
        # Not beside the tenant socket: containers are given that directory.
        os.makedirs(os.path.join(cls.dir, "admin"))
        cls.admin = os.path.join(cls.dir, "admin", "gpu0.sock")
        cls.server_log = os.path.join(cls.dir, "server.log")
        cls.plugin_log = os.path.join(cls.dir, "plugin.log")
        sa = os.path.join(cls.dir, "sa")
        os.makedirs(sa)
        with open(os.path.join(sa, "token"), "w") as f:
            f.write(SA_TOKEN + "\n")
        cls.api = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeApi)
        threading.Thread(target=cls.api.serve_forever, daemon=True).start()
        cls.registration = Registration()
        cls.kubelet = cls.start_kubelet()
        cls.podres = PodResources()
        cls.podres_sock = os.path.join(cls.dir, "pod-resources.sock")
        cls.podres_server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pr_grpc.add_PodResourcesListerServicer_to_server(cls.podres, cls.podres_server)
        cls.podres_server.add_insecure_port("unix:" + cls.podres_sock)
        cls.podres_server.start()
        cls.server = None
        cls.start_server()
        cls.plugin = subprocess.Popen(
            [os.environ["DSK_PLUGIN"], "--server", "gpu0=unix:%s,admin=unix:%s" % (cls.sock, cls.admin),
             # gpu1 has no server: its replicas stay unhealthy.
             "--server", "gpu1=unix:%s,admin=unix:%s" % (os.path.join(cls.dir, "gpu1", "ds.sock"),
                                                      os.path.join(cls.dir, "admin", "gpu1.sock")),
             "--replicas", "3", "--kubelet-dir", cls.kubelet_dir,
             "--pod-resources", "unix:" + cls.podres_sock,
             "--lib-dir", os.environ["DSK_LIB_DIR"],
             "--container-lib-dir", os.environ["DSK_LIB_DIR"],
             "--health-ms", "200", "--sync-ms", "200", "--grace-ms", "1500",
             "--api-server", "http://127.0.0.1:%d" % cls.api.server_port,
             "--service-account-dir", sa],
            stderr=cls.open_log(cls.plugin_log, "w"))
        cls.endpoint = os.path.join(cls.kubelet_dir, "detshare-gpu.sock")

    @classmethod
    def tearDownClass(cls):
        cls.plugin.send_signal(signal.SIGTERM)
        rc = cls.plugin.wait(timeout=20)
        cls.stop_server()
        cls.kubelet.stop(0)
        cls.podres_server.stop(0)
        cls.api.shutdown()
        cls.api.server_close()
        for f in cls.logs:
            f.close()
        with open(cls.plugin_log) as f:
            log = f.read()
        with open(cls.server_log) as f:
            server_log = f.read()
        if os.environ.get("DSK_KEEP"):
            print("kept", cls.dir)
        else:
            shutil.rmtree(cls.dir, ignore_errors=True)
        assert rc == 0, "the plugin exited %d on SIGTERM: %s" % (rc, log[-2000:])
        assert "Sanitizer" not in log, log[-4000:]
        assert "Sanitizer" not in server_log and "runtime error" not in server_log, \
            server_log[-4000:]

    @classmethod
    def open_log(cls, path, mode):
        f = open(path, mode)
        cls.logs.append(f)
        return f

    @classmethod
    def start_kubelet(cls):
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        dp_grpc.add_RegistrationServicer_to_server(cls.registration, server)
        server.add_insecure_port("unix:" + os.path.join(cls.kubelet_dir, "kubelet.sock"))
        server.start()
        return server

    @classmethod
    def start_server(cls):
        if not hasattr(cls, "metrics_port"):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                cls.metrics_port = s.getsockname()[1]
        cls.server = subprocess.Popen(
            [os.environ["DS_SERVER_BIN"], "--device", os.environ.get("DSK_DEVICE", "sim"),
             "--mps", "off", "--warm", "0",
             "--listen", "unix:" + cls.sock, "--admin", "unix:" + cls.admin, "--unix-token",
             "--metrics", "tcp:127.0.0.1:%d" % cls.metrics_port],
            stdout=subprocess.DEVNULL, stderr=cls.open_log(cls.server_log, "a"))
        wait_for(lambda: os.path.exists(cls.admin), 20, "the server's admin socket")

    @classmethod
    def stop_server(cls):
        if cls.server is not None:
            cls.server.send_signal(signal.SIGTERM)
            cls.server.wait(timeout=30)
            cls.server = None

    # ---- helpers ----

    def plugin_log_has(self, text):
        with open(self.plugin_log) as f:
            return text in f.read()

    def stub(self):
        wait_for(lambda: os.path.exists(self.endpoint), 10, "the plugin's socket")
        channel = grpc.insecure_channel("unix:" + self.endpoint)
        return dp_grpc.DevicePluginStub(channel)

    def watch(self):
        """ListAndWatch's lists, as they come, in a queue: {id: health}."""
        lists = queue.Queue()
        stream = self.stub().ListAndWatch(dp.Empty())

        def pump():
            try:
                for res in stream:
                    lists.put({d.ID: d.health for d in res.devices})
            except grpc.RpcError:
                pass
        threading.Thread(target=pump, daemon=True).start()
        return stream, lists

    def wait_health(self, lists, gpu, health, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                got = lists.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                break
            mine = [h for i, h in got.items() if i.startswith(gpu + "-")]
            if mine and all(h == health for h in mine):
                return got
        self.fail("no list with %s %s within %.1f s" % (gpu, health, timeout))

    def ctl(self, *args):
        return subprocess.run([os.environ["DS_CTL_BIN"], "--admin", "unix:" + self.admin]
                              + list(args), capture_output=True, text=True, timeout=30)

    def allocate(self, ids):
        res = self.stub().Allocate(dp.AllocateRequest(
            container_requests=[dp.ContainerAllocateRequest(devices_ids=ids)]))
        self.assertEqual(len(res.container_responses), 1)
        return res.container_responses[0]

    def tenant_env(self, c):
        env = {k: v for k, v in os.environ.items() if not k.startswith("DETSHARE_")}
        env.update(c.envs)
        return env

    def run_tenant(self, c):
        return subprocess.run([os.environ["DSK_TENANT"]], env=self.tenant_env(c),
                              capture_output=True, text=True, timeout=120)

    # ---- tests ----

    def test_a_registers_with_the_kubelet(self):
        req = self.registration.requests.get(timeout=20)
        self.assertEqual(req.version, "v1beta1")
        self.assertEqual(req.resource_name, RESOURCE)
        self.assertEqual(req.endpoint, "detshare-gpu.sock")
        self.assertTrue(req.options.get_preferred_allocation_available)
        opts = self.stub().GetDevicePluginOptions(dp.Empty())
        self.assertTrue(opts.get_preferred_allocation_available)

    def test_b_replicas_follow_their_servers_health(self):
        stream, lists = self.watch()
        first = self.wait_health(lists, "gpu0", "Healthy", 10)
        self.assertEqual(sorted(first), ["gpu0-r0", "gpu0-r1", "gpu0-r2",
                                         "gpu1-r0", "gpu1-r1", "gpu1-r2"])
        self.assertTrue(all(first[i] == "Unhealthy" for i in first if i.startswith("gpu1")))
        self.stop_server()
        t0 = time.monotonic()
        self.wait_health(lists, "gpu0", "Unhealthy", 5)
        self.assertLess(time.monotonic() - t0, 5)
        self.start_server()
        self.wait_health(lists, "gpu0", "Healthy", 5)
        self.assertTrue(self.plugin_log_has("GPU gpu0: its server does not answer"))
        stream.cancel()

    def test_c_registers_again_when_the_kubelet_restarts(self):
        wait_for(lambda: self.plugin_log_has("registered " + RESOURCE), 20, "a registration")
        while not self.registration.requests.empty():
            self.registration.requests.get()
        # What a restarting kubelet does: its socket goes, with every plugin's, and a
        # new one comes.
        self.__class__.kubelet.stop(0).wait()
        for sock in (os.path.join(self.kubelet_dir, "kubelet.sock"), self.endpoint):
            if os.path.exists(sock):  # gRPC may have removed its own already
                os.unlink(sock)
        self.assertFalse(os.path.exists(self.endpoint))
        self.__class__.kubelet = self.start_kubelet()
        req = self.registration.requests.get(timeout=10)
        self.assertEqual(req.resource_name, RESOURCE)
        stream, lists = self.watch()
        self.wait_health(lists, "gpu0", "Healthy", 10)
        stream.cancel()

    def test_a_an_admin_socket_containers_would_see_is_refused(self):
        r = subprocess.run([os.environ["DSK_PLUGIN"], "--lib-dir", "/x", "--server",
                            "gpu0=unix:/run/ds/gpu0/ds.sock,admin=unix:/run/ds/gpu0/ds.sock.admin"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn("the admin socket must be outside /run/ds/gpu0", r.stderr)
        r = subprocess.run([os.environ["DSK_PLUGIN"], "--lib-dir", "/x", "--server",
                            "gpu0=unix:/run/ds/gpu0/ds.sock"], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn("followed by ,admin=unix:PATH", r.stderr)

    def test_d_preferred_allocation_packs_on_one_gpu(self):
        res = self.stub().GetPreferredAllocation(dp.PreferredAllocationRequest(container_requests=[
            dp.ContainerPreferredAllocationRequest(
                available_deviceIDs=["gpu0-r0", "gpu1-r0", "gpu1-r1", "gpu0-r1", "gpu1-r2"],
                allocation_size=2),
            dp.ContainerPreferredAllocationRequest(
                available_deviceIDs=["gpu1-r0", "gpu0-r0", "gpu1-r1", "gpu0-r1"],
                must_include_deviceIDs=["gpu0-r1"], allocation_size=2)]))
        first, second = [list(c.deviceIDs) for c in res.container_responses]
        self.assertEqual(len(first), 2)
        self.assertEqual({i.split("-")[0] for i in first}, {"gpu1"})
        self.assertEqual(second, ["gpu0-r1", "gpu0-r0"])

    def test_e_allocate_gives_mounts_and_env_and_no_device_nodes(self):
        c = self.allocate(["gpu0-r0"])
        self.assertEqual(len(c.devices), 0, "device nodes given: %s" % c.devices)
        self.assertEqual(len(c.cdi_devices), 0)
        mounts = {m.container_path: (m.host_path, m.read_only) for m in c.mounts}
        self.assertEqual(mounts[os.environ["DSK_LIB_DIR"]], (os.environ["DSK_LIB_DIR"], True))
        self.assertEqual(mounts[self.sock_dir], (self.sock_dir, True))
        for host, _ in mounts.values():
            self.assertFalse(self.admin.startswith(host + "/"), "the admin socket is mounted")
        self.assertEqual(c.envs["LD_LIBRARY_PATH"], os.environ["DSK_LIB_DIR"])
        self.assertEqual(c.envs["DETSHARE_SERVER"], "unix:" + self.sock)
        self.assertEqual(len(c.envs["DETSHARE_TOKEN"]), 48)
        self.assertTrue(c.envs["DETSHARE_TENANT"].startswith("k8s-gpu0-"))
        self.assertNotIn("DETSHARE_SERVER_UID", c.envs)
        other = self.allocate(["gpu0-r1"])
        self.assertNotEqual(other.envs["DETSHARE_TOKEN"], c.envs["DETSHARE_TOKEN"])

    def metrics(self):
        url = "http://127.0.0.1:%d/metrics" % self.metrics_port
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.read().decode()

    @contextlib.contextmanager
    def staying_tenant(self, c):
        """A tenant with Allocate's answer c that stays connected while the block runs."""
        ready, stop = os.path.join(self.dir, "ready"), os.path.join(self.dir, "stop")
        for f in (ready, stop):
            if os.path.exists(f):
                os.unlink(f)
        soak = subprocess.Popen([os.environ["DSK_SOAK"], "good", ready, stop],
                                env=self.tenant_env(c), stdout=subprocess.DEVNULL,
                                stderr=self.open_log(os.path.join(self.dir, "soak.err"), "w"))
        try:
            wait_for(lambda: os.path.exists(ready) or soak.poll() is not None, 60,
                     "the tenant at work")
            self.assertIsNone(soak.poll(), "the tenant failed: see soak.err")
            yield
        finally:
            open(stop, "w").close()
            soak.wait(timeout=60)

    def quota_line(self, name):
        lines = [l for l in self.ctl("quota").stdout.splitlines()
                 if l.strip().startswith(name + ":")]
        return lines[0] if lines else None

    def test_f_the_token_serves_its_pod_until_the_replica_is_freed(self):
        c = self.allocate(["gpu0-r2"])
        self.podres.set({"ns1/pod-a": ["gpu0-r2"]})
        wait_for(lambda: self.plugin_log_has("is pod ns1/pod-a"), 5, "the pod bound")
        r = self.run_tenant(c)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(self.server_log) as f:
            self.assertIn("[ns1/pod-a] info: joined", f.read())
        if os.environ.get("DSK_SOAK"):
            # A tenant that stays: status and the metrics name it after its pod.
            with self.staying_tenant(c):
                status = self.ctl("status").stdout
                self.assertIn(" ns1/pod-a (", status)
                self.assertNotIn(c.envs["DETSHARE_TENANT"], status)
                self.assertIn('tenant="ns1/pod-a"', self.metrics())
        # Without the token the server refuses the same program.
        env = self.tenant_env(c)
        del env["DETSHARE_TOKEN"]
        r = subprocess.run([os.environ["DSK_TENANT"]], env=env, capture_output=True, text=True,
                           timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no token given", r.stderr)
        self.podres.set({})
        wait_for(lambda: self.plugin_log_has("freed gpu0-r2"), 10, "the replica freed")
        r = self.run_tenant(c)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("unknown token", r.stderr)

    def test_g_annotations_set_the_pods_quota_rule(self):
        FakeApi.annotations["ns2/llm"] = {
            "detshare.io/class": "latency", "detshare.io/slo-ms": "4.05",
            "detshare.io/memory": "1Gi", "detshare.io/sm-share": "50",
            "detshare.io/kernel-time": "80", "other.io/x": "y"}
        c = self.allocate(["gpu0-r0"])
        self.podres.set({"ns2/llm": ["gpu0-r0"]})
        line = wait_for(lambda: self.quota_line("ns2/llm"), 10, "the pod's quota rule")
        self.assertIn("memory 1 GiB", line)
        self.assertIn("sm-share 50%", line)
        self.assertIn("kernel-time 80%", line)
        self.assertIn("class latency", line)
        self.assertIn("/api/v1/namespaces/ns2/pods/llm", FakeApi.asked)
        if os.environ.get("DSK_SOAK"):
            # The SLO reaches the pod's tenants once they are connected, to the us.
            with self.staying_tenant(c):
                wait_for(lambda: "SLO 4.05 ms" in self.ctl("status").stdout, 10, "the SLO")
                status = self.ctl("status").stdout
                self.assertIn(" ns2/llm (latency", status)
                # Five more rounds of --sync-ms give it again: the server says it once.
                time.sleep(1)
            with open(self.server_log) as f:
                self.assertEqual(f.read().count("(ns2/llm) is now latency-critical, SLO 4.05 ms"),
                                 1)
        # Freed with its pod: the rule goes too.
        self.podres.set({})
        wait_for(lambda: self.quota_line("ns2/llm") is None, 10, "the rule lifted")

    def test_h_malformed_annotations_are_refused_with_the_pods_name(self):
        FakeApi.annotations["ns3/bad"] = {
            "detshare.io/memory": "lots", "detshare.io/sm-share": "150",
            "detshare.io/class": "best-effort", "detshare.io/slo-ms": "20",
            "detshare.io/kernel-time": "50", "detshare.io/colour": "blue"}
        # Finer than a microsecond.
        FakeApi.annotations["ns3/fine"] = {"detshare.io/slo-ms": "4.0505"}
        self.allocate(["gpu0-r1"])
        self.allocate(["gpu0-r2"])
        self.podres.set({"ns3/bad": ["gpu0-r1"], "ns3/fine": ["gpu0-r2"]})
        wait_for(lambda: self.plugin_log_has("pod ns3/bad: annotation refused, the default "
                                             "applies: detshare.io/memory=lots"), 10,
                 "the refusal logged")
        self.assertTrue(self.plugin_log_has("detshare.io/sm-share=150: a percentage"))
        self.assertTrue(self.plugin_log_has("pod ns3/bad: annotation refused, the default "
                                            "applies: detshare.io/slo-ms: a best-effort pod "
                                            "has no SLO"))
        self.assertTrue(self.plugin_log_has("detshare.io/colour: not a detshare annotation"))
        wait_for(lambda: self.plugin_log_has("pod ns3/fine: annotation refused, the default "
                                             "applies: detshare.io/slo-ms=4.0505: milliseconds"),
                 10, "the SLO's refusal logged")
        # What was well-formed applies.
        line = wait_for(lambda: self.quota_line("ns3/bad"), 10, "the pod's quota rule")
        self.assertIn("memory no limit", line)
        self.assertIn("sm-share no limit", line)
        self.assertIn("kernel-time 50%", line)
        self.assertIn("class best-effort", line)
        self.assertIsNone(self.plugin.poll(), "the plugin died")
        self.podres.set({})

    @unittest.skipUnless(os.environ.get("DSK_TORCH"), "DSK_TORCH names no PyTorch program")
    def test_i_pytorch_with_allocates_environment_matches_native(self):
        cmd = os.environ["DSK_TORCH"].split()
        c = self.allocate(["gpu0-r0"])
        self.podres.set({"ml/train-0": ["gpu0-r0"]})
        wait_for(lambda: self.plugin_log_has("is pod ml/train-0"), 5, "the pod bound")
        native_env = {k: v for k, v in os.environ.items() if not k.startswith("DETSHARE_")}
        native_env["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
        env = self.tenant_env(c)
        env["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
        native = subprocess.run(cmd, env=native_env, capture_output=True, text=True, timeout=580)
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        # The pod's tenant in the metrics while it runs.
        seen = False
        while proc.poll() is None and not seen:
            seen = 'tenant="ml/train-0"' in self.metrics()
            time.sleep(0.5)
        out, err = proc.communicate(timeout=580)
        shared = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
        self.assertTrue(seen, "no series of tenant ml/train-0 while it ran")
        self.assertEqual(native.returncode, 0, native.stderr[-2000:])
        self.assertEqual(shared.returncode, 0, shared.stderr[-2000:])
        losses = [l for l in native.stdout.splitlines() if "0x" in l]
        self.assertTrue(losses, native.stdout)
        self.assertEqual(losses, [l for l in shared.stdout.splitlines() if "0x" in l])
        with open(self.server_log) as f:
            self.assertIn("[ml/train-0] info: joined", f.read())
        self.podres.set({})


if __name__ == "__main__":
    unittest.main(verbosity=2)
