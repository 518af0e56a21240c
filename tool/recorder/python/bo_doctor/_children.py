"""Child processes stay recorded (docs/recording.md, "Processes, threads and files").

A child interpreter is recorded when it starts with the recorder's folder on PYTHONPATH and the
BOD_RECORD_* variables in its environment. A program that starts a child with an environment of
its own (`subprocess.run(..., env={...})`, `os.execve(..., env)`, `os.posix_spawn`), or that
changed os.environ's PYTHONPATH before starting one, would drop them: this module wraps the
functions every such start goes through and puts them back in the child's environment:
- `_posixsubprocess.fork_exec` (subprocess, multiprocessing's spawn and forkserver, os.popen);
- `os.execv` and `os.execve` (and so `os.execl*`, `os.execvp*`, `os.spawn*`);
- `os.posix_spawn` and `os.posix_spawnp` (subprocess's fast path too).

The child's environment keeps everything the program gave it; only the recorder's variables
(as `record` set them when this process started) are added, and the recorder's folder put first
on PYTHONPATH. Nothing else of the call changes: the wrapped function gets the same arguments
otherwise and its result or exception goes back unchanged. Not covered: a child started without
these functions (`os.system`, ctypes, a non-Python program in between that clears the
environment) after the program removed the variables, and a child Python started with `-E` or
`-I` (it ignores PYTHONPATH).
"""
import os
import sys

_VARS = {}     # BOD_RECORD_* -> value, as this process started
_FOLDER = ""   # the recorder's folder (holds sitecustomize.py)


def _fix_dict(env):
    """A copy of env (str or bytes keys) with the recorder's variables; None when it has them."""
    b = any(isinstance(k, bytes) for k in env.keys())
    enc = (lambda s: os.fsencode(s)) if b else (lambda s: s)
    dec = (lambda s: os.fsdecode(s)) if b else (lambda s: s)
    out = dict(env)
    changed = False
    for k, v in _VARS.items():
        if dec(out.get(enc(k), enc(""))) != v:
            out[enc(k)] = enc(v)
            changed = True
    pp = dec(out.get(enc("PYTHONPATH"), enc("")))
    parts = pp.split(os.pathsep) if pp else []
    if not parts or parts[0] != _FOLDER:
        out[enc("PYTHONPATH")] = enc(os.pathsep.join([_FOLDER] + [p for p in parts if p != _FOLDER]))
        changed = True
    return out if changed else None


def _fix_list(env_list):
    """fork_exec's environment (a list of b"K=V"), with the recorder's variables."""
    d = {}
    for kv in env_list:
        k, _, v = bytes(kv).partition(b"=")
        d[k] = v
    fixed = _fix_dict(d)
    if fixed is None:
        return env_list
    return [k + b"=" + v for k, v in fixed.items()]


def _wrap_fork_exec(orig):
    def fork_exec(*args, **kwargs):
        args = list(args)
        if len(args) > 5:
            env = args[5]
            if env is None:
                fixed = _fix_dict(os.environ)
                if fixed is not None:
                    args[5] = [os.fsencode(k) + b"=" + os.fsencode(v) for k, v in fixed.items()]
            else:
                args[5] = _fix_list(env)
        return orig(*args, **kwargs)
    fork_exec._bo_doctor_wrapped = True
    return fork_exec


def _wrap_execve(orig):
    def execve(path, args, env):
        fixed = _fix_dict(env)
        return orig(path, args, env if fixed is None else fixed)
    execve._bo_doctor_wrapped = True
    return execve


def _wrap_execv(orig, execve):
    def execv(path, args):
        fixed = _fix_dict(os.environ)
        if fixed is None:
            return orig(path, args)
        return execve(path, args, fixed)
    execv._bo_doctor_wrapped = True
    return execv


def _wrap_posix_spawn(orig):
    def posix_spawn(path, argv, env, *args, **kwargs):
        fixed = _fix_dict(env)
        return orig(path, argv, env if fixed is None else fixed, *args, **kwargs)
    posix_spawn._bo_doctor_wrapped = True
    return posix_spawn


def install(folder, variables):
    """Wraps the process-starting functions (once)."""
    global _FOLDER
    _FOLDER = folder
    _VARS.clear()
    _VARS.update(variables)
    try:
        import _posixsubprocess
        if not getattr(_posixsubprocess.fork_exec, "_bo_doctor_wrapped", False):
            _posixsubprocess.fork_exec = _wrap_fork_exec(_posixsubprocess.fork_exec)
    except (ImportError, AttributeError):
        pass
    if not getattr(os.execve, "_bo_doctor_wrapped", False):
        real_execve = os.execve
        os.execve = _wrap_execve(real_execve)
        os.execv = _wrap_execv(os.execv, real_execve)
    for name in ("posix_spawn", "posix_spawnp"):
        f = getattr(os, name, None)
        if f is not None and not getattr(f, "_bo_doctor_wrapped", False):
            setattr(os, name, _wrap_posix_spawn(f))
    return sys.modules[__name__]
