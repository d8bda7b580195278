"""Test support: gcloud's own entry point, loaded once and forked for each command (test/support/gcloud-forks.ts).

A gcloud start spends most of a second of CPU importing the SDK and building its command tree, the same for every
command; the documentation tests run close to a hundred. `server` does that once, then for each connection forks a
child that runs gcloud's main on the command's argv, environment, working directory and stdin, exactly as
lib/gcloud.py would after its imports, and answers its exit code; the command's output (stdout and stderr, in
order, as one stream) goes to a file the client reads. `client` is what the `gcloud` on the tests' PATH runs.
Nothing of one command reaches another: each runs in a child of the server, which itself never runs a command.

    python3 -S gcloud-forks.py server <sdk>/lib <socket> [module to import ahead…]
    python3 -S gcloud-forks.py client <argv…>     (KEYWARD_GCLOUD_FORKS: the socket)
"""
import json
import os
import socket
import sys
import tempfile


def read_all(conn):
    chunks = []
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            return b''.join(chunks)
        chunks.append(chunk)


def serve(sdk_lib, socket_path, ahead):
    sys.path.insert(0, sdk_lib)
    import gcloud  # the SDK's lib/gcloud.py: its own path order and module fix, then gcloud_main
    sys.path = gcloud.reorder_sys_path(sys.path)
    gcloud._fix_google_module()
    gcloud_main = gcloud._import_gcloud_main()
    cli = gcloud_main.CreateCLI([])
    import importlib
    for name in ahead:
        importlib.import_module(name)
    from googlecloudsdk.core.configurations import named_configs

    def run(conn):
        request = json.loads(read_all(conn))
        out = os.open(request['output'], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        stdin_r, stdin_w = os.pipe()
        os.write(stdin_w, request['stdin'].encode())
        os.close(stdin_w)
        os.dup2(stdin_r, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.chdir(request['cwd'])
        os.environ.clear()
        os.environ.update(request['env'])
        # The server read its properties with its own environment: this command reads them with its own.
        named_configs.ActivePropertiesFile.Invalidate()
        sys.argv = ['gcloud'] + request['argv']
        try:
            code = gcloud_main.main(gcloud_cli=cli) or 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        except BaseException:  # what lib/gcloud.py's handler would print, then exit 1
            import traceback
            traceback.print_exc()
            code = 1
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        conn.sendall(json.dumps({'code': code}).encode())
        conn.close()
        os._exit(0)

    server = socket.socket(socket.AF_UNIX)
    server.bind(socket_path)
    server.listen(64)
    sys.stdout.write('ready\n')
    sys.stdout.flush()
    while True:
        conn, _ = server.accept()
        if os.fork() == 0:
            server.close()
            run(conn)
        conn.close()
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass


def client(argv):
    folder = tempfile.mkdtemp(prefix='keyward-gcloud-')
    output = os.path.join(folder, 'output')
    stdin = '' if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(os.environ['KEYWARD_GCLOUD_FORKS'])
    conn.sendall(json.dumps({'argv': argv, 'env': dict(os.environ), 'cwd': os.getcwd(), 'stdin': stdin, 'output': output}).encode())
    conn.shutdown(socket.SHUT_WR)
    code = json.loads(read_all(conn))['code']
    with open(output, 'rb') as f:
        sys.stderr.buffer.write(f.read())
    os.remove(output)
    os.rmdir(folder)
    sys.exit(code)


if __name__ == '__main__':
    if sys.argv[1] == 'server':
        serve(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        client(sys.argv[2:])
