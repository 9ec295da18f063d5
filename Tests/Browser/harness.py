"""What the browser tests share: rewind-server on a database of its own, plain
NDJSON terminals to set documents up and read results, headless Chromium
(Debian's chromium and chromium-driver) driven by selenium, and the waits and
look-ups every test uses. The tests: test_editor.py (the editor: typing,
undo, shake, scrub, quick actions, restarts, signed tokens) and test_product.py
(the product: documents, sharing, boxes, offline, a phone, accessibility).

    python3 Tests/Browser/test_editor.py        runs both (scripts/test runs it, with PG* set)

REWIND_SCREENSHOTS=DIR saves the screenshots docs/protocol.md shows, "The web editor"
(your documents, sharing, two people in a document, boxes and Your changes, the shake
alert, the history slider, a reload offline, a phone's width; README.md shows the first
and the third) into DIR: REWIND_SCREENSHOTS=docs/screenshots to renew them.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import unittest

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("REWIND_BIN_DIR", os.path.join(ROOT, ".build", "debug"))
SHOTS = os.environ.get("REWIND_SCREENSHOTS")
# axe-core's script (scripts/test installs axe-selenium-python, which carries it, into .build-venv).
AXE = os.environ.get("REWIND_AXE_JS") or next(iter(__import__("glob").glob(os.path.join(
    ROOT, ".build-venv/lib/python3*/site-packages/axe_selenium_python/node_modules/axe-core/axe.min.js"))), None)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Terminal:
    """A plain NDJSON terminal, for setting documents up and checking the log's result."""

    def __init__(self, port, user, token):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.file = self.sock.makefile("rwb")
        self.next_id = 1
        self.pushes = []
        r = self.request("hello", user=user, token=token)
        assert r["ok"], r

    def request(self, type_, **fields):
        i = self.next_id
        self.next_id += 1
        self.file.write((json.dumps({"id": i, "type": type_, **fields}) + "\n").encode())
        self.file.flush()
        while True:
            m = json.loads(self.file.readline())
            if m.get("re") == i and "push" not in m:
                return m
            self.pushes.append(m)

    def close(self):
        self.sock.close()


class Server:
    """rewind-server on a fixed port (so a restart comes back where the pages look), its own database."""

    def __init__(self):
        self.db = "rewind_browser_%d" % os.getpid()
        subprocess.run(["psql", "-qX", "-d", "postgres", "-c", "DROP DATABASE IF EXISTS %s" % self.db, "-c", "CREATE DATABASE %s" % self.db],
                       check=True, stdout=subprocess.DEVNULL)
        self.conninfo = "dbname=%s" % self.db
        self.admin(["migrate"])
        self.tokens = {u: self.admin(["user", "add", u]).strip().splitlines()[-1] for u in ("alice", "bob")}
        # Signed tokens from an app's backend too (docs/examples/app_backend.py mints them).
        self.secret_file = "/tmp/%s.jwt-secret" % self.db
        with open(self.secret_file, "w") as f:
            f.write("a browser test's app secret, long enough to be real\n")
        self.port = free_port()
        self.proc = None
        self.start()

    def admin(self, args):
        return subprocess.run([os.path.join(BIN, "rewind"), "admin"] + args + ["--database", self.conninfo],
                              check=True, capture_output=True, text=True).stdout

    def start(self):
        self.proc = subprocess.Popen([os.path.join(BIN, "rewind-server"), "--listen", "127.0.0.1:%d" % self.port, "--database", self.conninfo,
                                      "--log-level", "warning", "--typing-window", "1500", "--jwt-secret-file", self.secret_file],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        assert "listening on" in line, line

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=20)
        if self.proc:
            self.proc.stdout.close()

    def drop(self):
        self.stop()
        if os.path.exists(self.secret_file):
            os.remove(self.secret_file)
        subprocess.run(["psql", "-qX", "-d", "postgres", "-c", "DROP DATABASE IF EXISTS %s" % self.db], stdout=subprocess.DEVNULL)

    def text(self, doc, node):
        nodes = json.loads(self.admin(["replay", doc]))["state"]["nodes"]
        return nodes[node]["text"] if node in nodes else None


def browser():
    options = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1100,760", "--force-device-scale-factor=1"):
        options.add_argument(a)
    options.binary_location = "/usr/bin/chromium"
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)



class BrowserTestCase(unittest.TestCase):
    """A server of its own per class of tests; pages closed and the database dropped after."""
    @classmethod
    def setUpClass(cls):
        cls.server = Server()
        cls.pages = []

    @classmethod
    def tearDownClass(cls):
        for p in cls.pages:
            p.quit()
        cls.server.drop()

    def page(self, user, doc=None):
        b = browser()
        self.pages.append(b)
        frag = "user=%s&token=%s" % (user, self.server.tokens[user]) + ("&doc=%s" % doc if doc else "")
        b.get("http://127.0.0.1:%d/#%s" % (self.server.port, frag))
        return b

    def wait(self, b, cond, what, seconds=15):
        try:
            return WebDriverWait(b, seconds, poll_frequency=0.05).until(lambda d: cond(d))
        except TimeoutException:
            self.fail("waited %d s for %s" % (seconds, what))

    def shot(self, b, name):
        if SHOTS:
            os.makedirs(SHOTS, exist_ok=True)
            b.save_screenshot(os.path.join(SHOTS, name + ".png"))

    def shared_doc(self, doc, text=""):
        """A document of alice's, shared with bob, with one text node `t`."""
        t = Terminal(self.server.port, "alice", self.server.tokens["alice"])
        assert t.request("create_doc", doc=doc, title=doc)["ok"]
        assert t.request("share", doc=doc, user="bob", role="editor")["ok"]
        r = t.request("submit", doc=doc, tx="setup", base=0, ops=[
            {"op": "create", "node": "title", "parent": "root", "kind": "view", "frame": [20, 20, 480, 40]},
            {"op": "create", "node": "t", "parent": "root", "kind": "text", "frame": [20, 80, 480, 120], "focusable": True, "text": text}])
        assert r["ok"], r
        t.close()

    def text_of(self, b, node="t"):
        return b.execute_script("return document.querySelector('textarea[data-node=\"%s\"]')?.value ?? null" % node)

    def type_into(self, b, text, node="t", at_end=True):
        ta = self.wait(b, lambda d: d.find_element(By.CSS_SELECTOR, 'textarea[data-node="%s"]' % node), "the text box")
        ta.click()
        if at_end:
            ta.send_keys(Keys.END)
            ta.send_keys(Keys.CONTROL, Keys.END)
        ta.send_keys(text)

    def settled(self, b):
        return b.execute_script("return window.rewind.client?.settled && window.rewind.client?.status === 'ready'")

    def button(self, b, id_):
        return b.find_element(By.ID, id_)

    def terminal(self, user):
        return Terminal(self.server.port, user, self.server.tokens[user])

    def rows(self, b):
        """The home screen's documents: (title, badge or None, meta) in order."""
        return b.execute_script("""return [...document.querySelectorAll('#doc-list .doc-row')].map(r =>
            [r.querySelector('.title').textContent, r.querySelector('.badge')?.textContent ?? null, r.querySelector('.meta').textContent, r.dataset.doc])""")

    def open_row(self, b, doc):
        """Clicks a document on the home screen (scrolled to the middle first: the header stays on top)."""
        row = self.wait(b, lambda d: d.find_element(By.CSS_SELECTOR, '.doc-row[data-doc="%s"]' % doc), "%s on the list" % doc)
        b.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
        row.click()

    def home(self, b):
        return self.wait(b, lambda d: d.find_element(By.ID, "start").is_displayed() and
                         d.find_element(By.ID, "doc-list").get_attribute("aria-busy") == "false", "the home screen")

    # ------------------------------------------------------------------

    def frame_of(self, doc, node):
        return json.loads(self.server.admin(["replay", doc]))["state"]["nodes"][node]["frame"]

    def axe(self, b, where):
        """axe-core on the page as it is: the serious and critical violations (none expected), each with where it is."""
        self.assertIsNotNone(AXE, "axe-core's script not found: run scripts/test (it installs axe-selenium-python into .build-venv)")
        with open(AXE) as f:
            b.execute_script(f.read())
        result = b.execute_async_script("const done = arguments[0]; axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations))")
        bad = ["%s (%s): %s" % (v["id"], v["impact"], [n["target"] for n in v["nodes"]][:4]) for v in result if v["impact"] in ("serious", "critical")]
        self.assertEqual(bad, [], "axe on %s" % where)
        return result
