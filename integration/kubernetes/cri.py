#!/usr/bin/python3
"""A small CRI v1 client that drives containerd's CRI plugin the way the
kubelet does (RunPodSandbox, CreateContainer, StartContainer, ExecSync,
ContainerStatus, Stop/Remove ...), for the Kubernetes scenarios.

The messages come from cri.proto next to this file: protoc (Debian's
python3-grpc-tools) compiles it once into a descriptor set under --gen DIR,
and the message classes are built from that at run time, so no generated
code has to match the installed protobuf library.

Requests are given and answers printed as the proto's JSON form
(camelCase, enums by name), e.g. a pod config
  {"metadata": {"name": "p", "namespace": "default", "uid": "u1"},
   "logDirectory": "/tmp/logs", "annotations": {"io.agentcage.tier": "1"},
   "linux": {"cgroupParent": "/kubepods/p"}}

Usage: cri.py --socket SOCK --gen DIR COMMAND ARGS
  version | status
  runp POD.json [--handler NAME]           prints the sandbox id
  create POD_ID CONTAINER.json POD.json    prints the container id
  start ID | stop ID [SECONDS] | rm ID | stopp POD_ID | rmp POD_ID
  inspect ID | inspectp POD_ID             the status (and verbose info) as JSON
  state ID                                 CONTAINER_RUNNING, CONTAINER_EXITED ...
  exec ID [--timeout S] -- CMD...          stdout/stderr as the command's; exits with its code
  wait ID STATE SECONDS                    polls until the container is in STATE
  pods | ps                                one id and name per line
  cleanup                                  stops and removes every pod
An RPC error prints `cri.py: METHOD: DETAILS` and exits 1.
"""
import json
import os
import subprocess
import sys
import time

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format
try:
    from google.protobuf import message_factory
except ImportError:  # pragma: no cover
    message_factory = None

HERE = os.path.dirname(os.path.abspath(__file__))
SERVICE = "runtime.v1.RuntimeService"


def load_messages(gen_dir):
    """The message classes of cri.proto, compiled into gen_dir once."""
    desc = os.path.join(gen_dir, "cri.desc")
    proto = os.path.join(HERE, "cri.proto")
    if not os.path.exists(desc) or os.path.getmtime(desc) < os.path.getmtime(proto):
        os.makedirs(gen_dir, exist_ok=True)
        tmp = desc + ".tmp.%d" % os.getpid()
        subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I", HERE,
                        "--descriptor_set_out=" + tmp, "cri.proto"], check=True)
        os.rename(tmp, desc)
    fds = descriptor_pb2.FileDescriptorSet()
    with open(desc, "rb") as f:
        fds.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for fd in fds.file:
        pool.Add(fd)
    fdesc = pool.FindFileByName("cri.proto")
    classes = {}
    for name, md in fdesc.message_types_by_name.items():
        if hasattr(message_factory, "GetMessageClass"):
            classes[name] = message_factory.GetMessageClass(md)
        else:
            classes[name] = message_factory.MessageFactory(pool).GetPrototype(md)
    return classes


class Client:
    def __init__(self, socket, gen_dir):
        self.msgs = load_messages(gen_dir)
        self.channel = grpc.insecure_channel("unix://" + socket)

    def call(self, method, request=None, deadline=120, **fields):
        req_cls = self.msgs[method + "Request"]
        resp_cls = self.msgs[method + "Response"]
        req = req_cls()
        if request is not None:
            json_format.ParseDict(request, req, ignore_unknown_fields=False)
        for k, v in fields.items():
            setattr(req, k, v)
        stub = self.channel.unary_unary("/%s/%s" % (SERVICE, method),
                                        request_serializer=req_cls.SerializeToString,
                                        response_deserializer=resp_cls.FromString)
        try:
            return stub(req, timeout=deadline)
        except grpc.RpcError as e:
            sys.stderr.write("cri.py: %s: %s\n" % (method, e.details()))
            sys.exit(1)


def to_json(msg):
    return json_format.MessageToDict(msg, including_default_value_fields=True)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def container_state(c, cid):
    st = c.call("ContainerStatus", container_id=cid).status
    return c.msgs["ContainerStatus"].DESCRIPTOR.fields_by_name["state"].enum_type.values_by_number[st.state].name


def main(argv):
    socket = gen = None
    while argv and argv[0].startswith("--"):
        if argv[0] == "--socket":
            socket = argv[1]
        elif argv[0] == "--gen":
            gen = argv[1]
        else:
            break
        argv = argv[2:]
    if not socket or not gen or not argv:
        sys.stderr.write(__doc__)
        return 2
    c = Client(socket, gen)
    cmd, args = argv[0], argv[1:]
    if cmd == "version":
        print(json.dumps(to_json(c.call("Version", version="v1"))))
    elif cmd == "status":
        print(json.dumps(to_json(c.call("Status", verbose=False))))
    elif cmd == "runp":
        handler = ""
        if len(args) == 3 and args[1] == "--handler":
            handler = args[2]
        r = c.call("RunPodSandbox", {"config": read_json(args[0]), "runtimeHandler": handler})
        print(r.pod_sandbox_id)
    elif cmd == "create":
        r = c.call("CreateContainer", {"podSandboxId": args[0], "config": read_json(args[1]),
                                       "sandboxConfig": read_json(args[2])})
        print(r.container_id)
    elif cmd == "start":
        c.call("StartContainer", container_id=args[0])
    elif cmd == "stop":
        c.call("StopContainer", container_id=args[0], timeout=int(args[1]) if len(args) > 1 else 0)
    elif cmd == "rm":
        c.call("RemoveContainer", container_id=args[0])
    elif cmd == "stopp":
        c.call("StopPodSandbox", pod_sandbox_id=args[0])
    elif cmd == "rmp":
        c.call("RemovePodSandbox", pod_sandbox_id=args[0])
    elif cmd == "inspect":
        r = c.call("ContainerStatus", container_id=args[0], verbose=True)
        print(json.dumps(to_json(r)))
    elif cmd == "inspectp":
        r = c.call("PodSandboxStatus", pod_sandbox_id=args[0], verbose=True)
        print(json.dumps(to_json(r)))
    elif cmd == "state":
        print(container_state(c, args[0]))
    elif cmd == "exec":
        timeout = 0
        if args[1:2] == ["--timeout"]:
            timeout = int(args[2])
            args = args[:1] + args[3:]
        if args[1:2] == ["--"]:
            args = args[:1] + args[2:]
        r = c.call("ExecSync", {"containerId": args[0], "cmd": args[1:], "timeout": str(timeout)})
        sys.stdout.buffer.write(r.stdout)
        sys.stderr.buffer.write(r.stderr)
        return r.exit_code
    elif cmd == "wait":
        deadline = time.time() + float(args[2])
        while True:
            s = container_state(c, args[0])
            if s == args[1]:
                return 0
            if time.time() > deadline:
                sys.stderr.write("cri.py: wait: %s is %s, not %s\n" % (args[0], s, args[1]))
                return 1
            time.sleep(0.2)
    elif cmd == "pods":
        for p in c.call("ListPodSandbox").items:
            print(p.id, p.metadata.namespace + "/" + p.metadata.name)
    elif cmd == "ps":
        for x in c.call("ListContainers").containers:
            print(x.id, x.pod_sandbox_id, x.metadata.name)
    elif cmd == "cleanup":
        for p in c.call("ListPodSandbox").items:
            for x in c.call("ListContainers", {"filter": {"podSandboxId": p.id}}).containers:
                c.call("StopContainer", container_id=x.id, timeout=0)
                c.call("RemoveContainer", container_id=x.id)
            c.call("StopPodSandbox", pod_sandbox_id=p.id)
            c.call("RemovePodSandbox", pod_sandbox_id=p.id)
    else:
        sys.stderr.write("cri.py: unknown command `%s`\n" % cmd)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
