"""The web editor in a real browser: headless Chromium (Debian's chromium and
chromium-driver) driven by selenium, against the real server and PostgreSQL.

    python3 Tests/Browser/test_editor.py        (scripts/test runs it, with PG* set)

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


class EditorTests(unittest.TestCase):
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

    def test_1_two_people_type_into_one_text_and_see_each_other(self):
        self.shared_doc("together")
        a = self.page("alice", "together")
        b = self.page("bob", "together")
        self.wait(a, lambda d: self.text_of(d) == "", "alice's page to open the document")
        self.wait(b, lambda d: self.text_of(d) == "", "bob's page to open the document")
        self.type_into(a, "Hello")
        self.wait(b, lambda d: self.text_of(d) == "Hello", "bob to see alice's typing")
        self.type_into(b, ", world")
        self.wait(a, lambda d: self.text_of(d) == "Hello, world", "alice to see bob's typing")
        self.wait(a, lambda d: d.find_elements(By.CSS_SELECTOR, ".caret[data-name='bob']"), "bob's caret on alice's page")
        self.wait(a, lambda d: d.execute_script("return [...window.rewind.client.presence.values()].some(p => p.user === 'bob' && p.selection?.start === 12)"),
                  "bob's caret after his typing, at the end")
        self.wait(a, self.settled, "alice's edits committed")
        self.wait(b, self.settled, "bob's edits committed")
        self.assertEqual(self.server.text("together", "t"), "Hello, world")
        self.shot(a, "document-two-people")

    def test_2_the_undo_button_is_titled_from_prompt_state_and_undoes(self):
        self.shared_doc("undoing", "start ")
        a = self.page("alice", "undoing")
        self.wait(a, lambda d: self.text_of(d) == "start ", "the document")
        self.type_into(a, "typed")
        undo = self.button(a, "undo")
        self.wait(a, lambda d: undo.text == "Undo Typing", "the Undo button to read Undo Typing (it reads %r)" % undo.text)
        undo.click()
        self.wait(a, lambda d: self.text_of(d) == "start ", "the typing undone")
        self.wait(a, lambda d: self.button(d, "redo").text == "Redo Typing", "Redo Typing")
        ActionChains(a).key_down(Keys.CONTROL).key_down(Keys.SHIFT).send_keys("z").key_up(Keys.SHIFT).key_up(Keys.CONTROL).perform()
        self.wait(a, lambda d: self.text_of(d) == "start typed", "Shift-Ctrl-Z to redo")
        self.wait(a, self.settled, "committed")
        self.assertEqual(self.server.text("undoing", "t"), "start typed")

    def test_3_shake_presents_the_alert_and_its_action_undoes(self):
        self.shared_doc("shaking")
        a = self.page("alice", "shaking")
        self.wait(a, lambda d: self.text_of(d) == "", "the document")
        self.type_into(a, "oops")
        self.wait(a, lambda d: self.button(d, "undo").text == "Undo Typing", "something to undo")
        self.button(a, "shake").click()
        alert = self.wait(a, lambda d: d.find_elements(By.CSS_SELECTOR, "[role=alertdialog]"), "the alert")[0]
        self.assertEqual(alert.find_element(By.TAG_NAME, "h2").text, "Undo Typing")
        titles = [btn.text for btn in alert.find_elements(By.TAG_NAME, "button")]
        self.assertEqual(titles[-1], "Cancel", "cancel apart, last: %r" % titles)
        self.shot(a, "shake-alert")
        [btn for btn in alert.find_elements(By.TAG_NAME, "button") if btn.text == "Undo"][0].click()
        self.wait(a, lambda d: self.text_of(d) == "", "the alert's Undo to undo the typing")
        self.wait(a, lambda d: not d.find_elements(By.CSS_SELECTOR, "[role=alertdialog]"), "the alert dismissed")

    def test_4_scrub_to_zero_restore_then_undo(self):
        self.shared_doc("scrubbing", "kept text")
        a = self.page("alice", "scrubbing")
        self.wait(a, lambda d: self.text_of(d) == "kept text", "the document")
        self.button(a, "history").click()
        a.execute_script("const s = document.getElementById('scrub'); s.value = 0; s.dispatchEvent(new Event('input'));")
        self.wait(a, lambda d: self.text_of(d) is None and "0 of" in d.find_element(By.ID, "scrub-version").text, "version 0 shown")
        self.shot(a, "history-slider")
        a.execute_script("const s = document.getElementById('scrub'); s.value = 100; s.dispatchEvent(new Event('input'));")
        self.wait(a, lambda d: self.text_of(d) == "kept text", "the head again")
        a.execute_script("const s = document.getElementById('scrub'); s.value = 0; s.dispatchEvent(new Event('input'));")
        self.wait(a, lambda d: self.text_of(d) is None and "0 of" in d.find_element(By.ID, "scrub-version").text, "version 0 again")
        self.button(a, "restore").click()
        self.wait(a, lambda d: self.text_of(d) is None and d.find_element(By.ID, "scrubber").get_attribute("class") == "hidden", "restored to version 0")
        undo = self.button(a, "undo")
        self.wait(a, lambda d: undo.text == "Undo Restore Version", "Undo Restore Version (it reads %r)" % undo.text)
        undo.click()
        self.wait(a, lambda d: self.text_of(d) == "kept text", "the restore undone")
        self.assertEqual(self.server.text("scrubbing", "t"), "kept text")

    def test_5_the_start_screen_peek_and_pop(self):
        self.shared_doc("peeking", "a preview of this")
        a = self.page("alice")
        card = self.wait(a, lambda d: d.find_elements(By.CSS_SELECTOR, '.shortcut[data-doc="peeking"]'), "the document among the quick actions")[0]
        self.assertTrue(a.find_elements(By.XPATH, "//button[contains(., 'New Document')]"), "New Document on the start screen")
        self.shot(a, "start-screen")
        ActionChains(a).move_to_element(card).perform()
        self.wait(a, lambda d: "a preview of this" in d.find_element(By.ID, "peek-preview").text, "the peek preview")
        a.find_element(By.XPATH, "//div[@id='peek-actions']/button[contains(., 'Pop')]").click()
        self.wait(a, lambda d: self.text_of(d) == "a preview of this", "pop to open the document")
        # New Document from the start screen.
        self.button(a, "home").click()
        self.wait(a, lambda d: d.find_elements(By.XPATH, "//button[contains(., 'New Document')]"), "the start screen")[0].click()
        self.wait(a, lambda d: d.execute_script("return location.hash").startswith("#doc=doc-") and self.text_of(d) is None
                  and d.execute_script("return window.rewind.client.loaded"), "a new document open, named by the address")

    def test_6_a_server_restarted_while_a_page_types_loses_and_doubles_nothing(self):
        self.shared_doc("restarting")
        a = self.page("alice", "restarting")
        self.wait(a, lambda d: self.text_of(d) == "", "the document")
        self.type_into(a, "before ")
        self.wait(a, self.settled, "the first typing committed")
        self.server.stop()
        self.wait(a, lambda d: d.find_element(By.ID, "status").text.startswith(("reconnecting", "offline")), "the page to see the server gone")
        self.type_into(a, "while away ")
        self.assertIn("kept", a.find_element(By.ID, "status").text, "unsent edits are said to be kept")
        self.server.start()
        self.wait(a, lambda d: d.find_element(By.ID, "status").text == "connected", "the page to reconnect", seconds=30)
        self.type_into(a, "after")
        self.wait(a, self.settled, "everything committed")
        self.assertEqual(self.text_of(a), "before while away after")
        self.assertEqual(self.server.text("restarting", "t"), "before while away after", "nothing lost, nothing doubled")

    def test_7_a_token_from_the_apps_backend_signs_in_and_edits(self):
        # What an app does: its backend mints a token for its signed-in user; the page hands it to rewind.js.
        token = subprocess.run([sys.executable, os.path.join(ROOT, "docs", "examples", "app_backend.py"),
                                self.server.secret_file, "app-user-7", "Grace Hopper"], check=True, capture_output=True, text=True).stdout.strip()
        b = browser()
        self.pages.append(b)
        b.get("http://127.0.0.1:%d/#jwt=%s" % (self.server.port, token))
        self.wait(b, lambda d: d.find_element(By.ID, "who").text == "app-user-7", "the page to sign in as the token's user (made on first sight)")
        # Alice shares a document with the app's user by its handle (the token's sub), as with any user.
        self.shared_doc("signed")
        t = Terminal(self.server.port, "alice", self.server.tokens["alice"])
        assert t.request("share", doc="signed", user="app-user-7", role="editor")["ok"]
        assert t.request("open", doc="signed")["ok"]
        b.get("http://127.0.0.1:%d/#jwt=%s&doc=signed" % (self.server.port, token))
        b.refresh()
        self.wait(b, lambda d: self.text_of(d) == "", "the shared document open on the signed-in page")
        self.type_into(b, "signed in by the app")
        self.wait(b, self.settled, "the typing committed (client: %s)" % b.execute_script(
            "const c = window.rewind.client; return JSON.stringify({status: c?.status, error: c?.lastError?.message, code: c?.lastError?.code, settled: c?.settled, doc: c?.doc})"))
        self.assertEqual(self.server.text("signed", "t"), "signed in by the app")
        self.shot(b, "signed-in-by-token")
        # Others see the token's display name.
        deadline = time.time() + 10
        while time.time() < deadline and not any(p.get("push") == "presence" and p.get("user") == "Grace Hopper" for p in t.pushes):
            t.sock.settimeout(1)
            try:
                t.request("ping")
            except OSError:
                pass
        self.assertTrue(any(p.get("push") == "presence" and p.get("user") == "Grace Hopper" for p in t.pushes), "presence shows the token's name")
        t.close()

    def test_8a_home_lists_documents_new_with_a_title_rename_reload_back_and_sign_out(self):
        t = self.terminal("bob")
        assert t.request("create_doc", doc="bobs-8", title="Bob's budget")["ok"]
        assert t.request("share", doc="bobs-8", user="alice", role="viewer")["ok"]
        t.close()
        a = self.page("alice")
        self.home(a)
        self.assertNotIn("token", a.current_url, "the sign-in link is taken out of the address")
        rows = self.rows(a)
        self.assertIn(["Bob's budget", "bob's · can view", rows[0][2], "bobs-8"], rows, rows)
        self.shot(a, "home")
        # New, with a title: the address names it.
        self.button(a, "new-doc").click()
        title = a.find_element(By.CSS_SELECTOR, "#new-doc-form input[name=title]")
        title.send_keys("Quarterly plan", Keys.ENTER)
        self.wait(a, lambda d: d.execute_script("return location.hash").startswith("#doc=doc-") and
                  d.find_element(By.ID, "doc-title").get_attribute("value") == "Quarterly plan", "the new document open, titled")
        doc = a.execute_script("return window.rewind.client.doc")
        self.assertEqual(a.title, "Quarterly plan — Rewind")
        # Renamed in place: Enter saves it, in the database.
        field = a.find_element(By.ID, "doc-title")
        field.click()
        field.send_keys(Keys.CONTROL, "a")
        field.send_keys("Q3 plan", Keys.ENTER)
        t = self.terminal("alice")
        self.wait(a, lambda d: t.request("doc_info", doc=doc).get("title") == "Q3 plan", "the rename stored")
        # A reload keeps the sign-in (the tab's) and the open document (the address's).
        a.refresh()
        self.wait(a, lambda d: d.execute_script("return window.rewind.client?.doc") == doc and
                  d.find_element(By.ID, "doc-title").get_attribute("value") == "Q3 plan", "the same document after a reload")
        # Back goes home (the list has it first, newest), forward to the document again.
        a.back()
        self.home(a)
        self.wait(a, lambda d: self.rows(d) and self.rows(d)[0][0] == "Q3 plan", "Q3 plan first on the list (%r)" % self.rows(a))
        a.forward()
        self.wait(a, lambda d: d.find_element(By.ID, "editor").is_displayed() and d.execute_script("return window.rewind.client.doc") == doc, "forward to it")
        # A click on a row opens it.
        a.back()
        self.home(a)
        self.open_row(a, "bobs-8")
        self.wait(a, lambda d: d.find_element(By.ID, "doc-title").get_attribute("value") == "Bob's budget", "bob's document, open")
        self.assertEqual(a.find_element(By.ID, "doc-title").get_attribute("readonly"), "true", "a viewer cannot rename")
        self.assertFalse(a.find_element(By.ID, "share").is_displayed(), "nor share")
        # Signing out forgets the tab's sign-in.
        self.button(a, "sign-out").click()
        self.wait(a, lambda d: d.find_element(By.ID, "signin").is_displayed(), "the sign-in form")
        a.refresh()
        self.wait(a, lambda d: d.find_element(By.ID, "signin").is_displayed(), "still signed out after a reload")
        self.assertIsNone(a.execute_script("return sessionStorage.getItem('rewind.signin')"))
        t.close()

    def test_8b_share_change_and_remove_between_two_pages(self):
        t = self.terminal("alice")
        assert t.request("create_doc", doc="team-8", title="Team notes")["ok"]
        assert t.request("submit", doc="team-8", tx="s", base=0, ops=[
            {"op": "create", "node": "t", "parent": "root", "kind": "text", "frame": [20, 20, 480, 120], "focusable": True,
             "text": "", "props": {"title": "Agenda"}}])["ok"]
        a = self.page("alice", "team-8")
        self.wait(a, lambda d: self.text_of(d) == "", "alice's document")
        self.assertEqual(a.find_element(By.CSS_SELECTOR, '.node[data-node="t"] > .label').text, "Agenda", "a node is named by its title")
        b = self.page("bob")
        self.home(b)
        self.assertNotIn("team-8", [r[3] for r in self.rows(b)], "not bob's yet")
        self.button(a, "share").click()
        add = self.wait(a, lambda d: d.find_element(By.CSS_SELECTOR, "#share-add input[name=user]"), "the Share dialog")
        add.send_keys("bob")
        a.find_element(By.CSS_SELECTOR, "#share-add select").send_keys("Can edit")
        a.find_element(By.CSS_SELECTOR, "#share-add button").click()
        self.wait(a, lambda d: d.find_elements(By.CSS_SELECTOR, '#members li[data-user="bob"]'), "bob among the members")
        self.assertEqual(a.find_element(By.CSS_SELECTOR, '#members li[data-user="bob"] select').get_attribute("value"), "editor")
        a.find_element(By.CSS_SELECTOR, "#share-add input[name=user]").send_keys("nobody-here")
        a.find_element(By.CSS_SELECTOR, "#share-add button").click()
        self.wait(a, lambda d: "nobody-here" in d.find_element(By.ID, "share-error").text, "a name that is no user, said")
        self.shot(a, "share-dialog")
        self.button(a, "share-done").click()
        # Bob's list has it now; he opens it and types; alice sees him.
        b.refresh()
        self.home(b)
        self.open_row(b, "team-8")
        self.wait(b, lambda d: self.text_of(d) == "", "bob's page on the shared document")
        self.type_into(b, "from bob")
        self.wait(a, lambda d: self.text_of(d) == "from bob", "alice sees bob's typing")
        self.wait(a, lambda d: d.find_elements(By.CSS_SELECTOR, '#people .avatar[aria-label="bob"]'), "bob's avatar on alice's page")
        # A viewer now: bob's page reloads as one (no rename); removed: his page is told.
        self.button(a, "share").click()
        role = self.wait(a, lambda d: d.find_element(By.CSS_SELECTOR, '#members li[data-user="bob"] select'), "bob's row")
        role.send_keys("Can view")
        self.wait(a, lambda d: t.request("doc_info", doc="team-8")["members"] == [{"user": "bob", "role": "viewer"}], "bob a viewer")
        self.wait(a, lambda d: d.execute_script("""return document.querySelector('#members li[data-user="bob"] select')?.value""") == "viewer",
                  "bob's row again, a viewer")
        a.execute_script("""document.querySelector('#members li[data-user="bob"] button').click()""")
        self.wait(a, lambda d: not d.find_elements(By.CSS_SELECTOR, '#members li[data-user="bob"]'), "bob removed")
        self.wait(b, lambda d: "taken away" in d.find_element(By.ID, "error").text, "bob's page told it lost the document")
        self.assertEqual(t.request("doc_info", doc="team-8").get("members"), [])
        t.close()

    def test_8c_delete_then_undo_then_undelete_from_recently_deleted(self):
        t = self.terminal("alice")
        assert t.request("create_doc", doc="draft-8", title="Old draft")["ok"]
        a = self.page("alice", "draft-8")
        self.wait(a, lambda d: d.find_element(By.ID, "doc-title").get_attribute("value") == "Old draft", "the document")
        self.button(a, "delete-doc").click()
        self.wait(a, lambda d: "Deleted “Old draft”" in d.find_element(By.ID, "toast").text, "the Deleted toast, with Undo")
        self.home(a)
        self.wait(a, lambda d: "draft-8" not in [r[3] for r in self.rows(d)], "gone from the list")
        self.assertEqual(t.request("open", doc="draft-8")["error"]["code"], "not_found")
        self.button(a, "toast-action").click()
        self.wait(a, lambda d: "draft-8" in [r[3] for r in self.rows(d)], "back on the list after Undo")
        self.assertTrue(t.request("open", doc="draft-8")["ok"])
        # Deleted again; brought back from Recently deleted this time.
        self.open_row(a, "draft-8")
        self.wait(a, lambda d: d.find_element(By.ID, "delete-doc").is_displayed(), "the owner's Delete")
        self.button(a, "delete-doc").click()
        self.home(a)
        a.find_element(By.CSS_SELECTOR, "#deleted-box summary").click()
        restore = self.wait(a, lambda d: d.find_element(By.CSS_SELECTOR, '#deleted-list button[aria-label="Undelete Old draft"]'), "Old draft among Recently deleted")
        self.shot(a, "recently-deleted")
        restore.click()
        self.wait(a, lambda d: "draft-8" in [r[3] for r in self.rows(d)], "back on the list after Undelete")
        t.close()

    def frame_of(self, doc, node):
        return json.loads(self.server.admin(["replay", doc]))["state"]["nodes"][node]["frame"]

    def test_8d_boxes_moved_and_resized_by_mouse_and_keys_undone_from_your_changes(self):
        self.shared_doc("boxes-8")
        a = self.page("alice", "boxes-8")
        self.wait(a, lambda d: self.text_of(d) == "", "the document")
        box = a.find_element(By.CSS_SELECTOR, '.node[data-node="title"]')
        ActionChains(a).move_to_element(box).click_and_hold().move_by_offset(60, 20).move_by_offset(40, 30).release().perform()
        self.wait(a, lambda d: self.button(d, "undo").text == "Undo Move", "Undo Move (it reads %r)" % self.button(a, "undo").text)
        self.wait(a, self.settled, "the move committed")
        self.assertEqual(self.frame_of("boxes-8", "title"), [120, 70, 480, 40], "one set frame, where the mouse let go")
        grip = a.find_element(By.CSS_SELECTOR, '.node[data-node="title"] > .grip')
        self.assertTrue(grip.is_displayed(), "the selected box shows its grip")
        ActionChains(a).move_to_element(grip).click_and_hold().move_by_offset(40, 20).release().perform()
        self.wait(a, lambda d: self.button(d, "undo").text == "Undo Resize", "Undo Resize")
        self.wait(a, self.settled, "the resize committed")
        self.assertEqual(self.frame_of("boxes-8", "title"), [120, 70, 520, 60])
        self.assertEqual(self.button(a, "undo").get_attribute("title"), "Undo Resize (Ctrl+Z)", "the tooltip names the key")
        # The keyboard: the selected box has the focus; an arrow moves it 10 px.
        self.wait(a, lambda d: d.execute_script("return document.activeElement?.dataset?.node") == "title", "the box focused")
        a.switch_to.active_element.send_keys(Keys.ARROW_RIGHT)
        self.wait(a, lambda d: self.settled(d) and self.frame_of("boxes-8", "title") == [130, 70, 520, 60], "moved by the arrow key")
        self.shot(a, "move-resize")
        # Ctrl+Z undoes the last (the arrow's move); Shift+Ctrl+Z brings it back.
        ActionChains(a).key_down(Keys.CONTROL).send_keys("z").key_up(Keys.CONTROL).perform()
        self.wait(a, lambda d: self.settled(d) and self.frame_of("boxes-8", "title") == [120, 70, 520, 60], "Ctrl+Z: the arrow's move undone")
        self.wait(a, lambda d: self.button(d, "redo").text == "Redo Move", "Redo Move")
        ActionChains(a).key_down(Keys.CONTROL).key_down(Keys.SHIFT).send_keys("z").key_up(Keys.SHIFT).key_up(Keys.CONTROL).perform()
        self.wait(a, lambda d: self.settled(d) and self.frame_of("boxes-8", "title") == [130, 70, 520, 60], "Shift+Ctrl+Z: redone")
        # Your changes: newest first (the set-up, alice's too, is an unnamed edit); choosing the third undoes three.
        self.button(a, "changes-toggle").click()
        self.wait(a, lambda d: [b.text for b in d.find_elements(By.CSS_SELECTOR, "#undo-list button")] == ["Undo Move", "Undo Resize", "Undo Move", "Undo Edit"],
                  "four groups listed (%r)" % [b.text for b in a.find_elements(By.CSS_SELECTOR, "#undo-list button")])
        self.shot(a, "your-changes")
        a.find_elements(By.CSS_SELECTOR, "#undo-list button")[2].click()
        self.wait(a, lambda d: self.settled(d) and self.frame_of("boxes-8", "title") == [20, 20, 480, 40], "all three undone")
        self.wait(a, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#redo-list button")) == 3, "three to redo")
        # A viewer's page moves nothing.
        t = self.terminal("alice")
        assert t.request("share", doc="boxes-8", user="bob", role="viewer")["ok"]
        b = self.page("bob", "boxes-8")
        self.wait(b, lambda d: self.text_of(d) == "", "bob's page")
        vbox = b.find_element(By.CSS_SELECTOR, '.node[data-node="title"]')
        ActionChains(b).move_to_element(vbox).click_and_hold().move_by_offset(50, 50).release().perform()
        time.sleep(0.5)
        self.assertEqual(self.frame_of("boxes-8", "title"), [20, 20, 480, 40], "a viewer cannot move a box")
        t.close()

    def test_8e_edits_made_offline_survive_a_reload_and_are_delivered_once(self):
        self.shared_doc("offline-8")
        a = self.page("alice", "offline-8")
        self.wait(a, lambda d: self.text_of(d) == "", "the document")
        self.type_into(a, "before ")
        self.wait(a, self.settled, "the first typing committed")
        self.wait(a, lambda d: d.execute_script("return !!navigator.serviceWorker.controller"), "the offline worker in charge of the page")
        self.server.stop()
        self.wait(a, lambda d: d.find_element(By.ID, "status").text.startswith(("reconnecting", "offline")), "the page to see the server gone")
        self.type_into(a, "away ")
        self.wait(a, lambda d: "1 change waiting to be sent" in d.find_element(By.ID, "status").text, "the page to say one change waits")
        time.sleep(0.6)   # kept 300 ms after the last change
        a.refresh()
        self.wait(a, lambda d: self.text_of(d) == "before away ", "the kept edit shown after the reload, the server still away")
        self.assertIn("1 change waiting", a.find_element(By.ID, "status").text)
        self.assertEqual(a.find_element(By.ID, "doc-title").get_attribute("value"), "offline-8", "its title kept too")
        self.shot(a, "offline-kept")
        self.type_into(a, "more")
        self.server.start()
        self.wait(a, lambda d: d.find_element(By.ID, "status").text == "connected", "the page to connect", seconds=30)
        self.wait(a, self.settled, "everything committed")
        self.assertEqual(self.server.text("offline-8", "t"), "before away more", "delivered once: nothing lost, nothing doubled")
        self.assertEqual(a.execute_script("return document.getElementById('doc-title').value"), "offline-8", "its title read once connected")
        a.refresh()
        self.wait(a, lambda d: self.text_of(d) == "before away more", "nothing kept to send again after a reload")
        self.wait(a, self.settled, "settled")
        self.assertEqual(self.server.text("offline-8", "t"), "before away more")

    def test_8f_a_phone_shaken_asks_the_servers_shake_prompt(self):
        self.shared_doc("phone-8")
        a = self.page("alice", "phone-8")
        self.wait(a, lambda d: self.text_of(d) == "", "the document")
        self.type_into(a, "oops")
        self.wait(a, lambda d: self.button(d, "undo").text == "Undo Typing", "something to undo")
        # iOS: motion needs a permission asked from a tap; the page offers the button where the browser asks.
        self.assertFalse(a.find_element(By.ID, "shake-permission").is_displayed(), "not offered on a desktop")
        a.execute_script("""DeviceMotionEvent.requestPermission = async () => { window.asked = (window.asked ?? 0) + 1; return 'granted'; };
                            Object.defineProperty(navigator, 'maxTouchPoints', { get: () => 5 });""")
        self.button(a, "home").click()
        self.home(a)
        self.open_row(a, "phone-8")
        allow = self.wait(a, lambda d: d.find_element(By.ID, "shake-permission").is_displayed() and d.find_element(By.ID, "shake-permission"),
                          "Allow shake to undo, offered")
        allow.click()
        self.wait(a, lambda d: d.execute_script("return window.asked") == 1 and not d.find_element(By.ID, "shake-permission").is_displayed(), "asked once, then hidden")
        # Two strong jolts within half a second: the shake prompt, as the Shake button would.
        a.execute_script("""for (const x of [30, -30]) window.dispatchEvent(new DeviceMotionEvent('devicemotion',
                            {acceleration: {x, y: 0, z: 0}, accelerationIncludingGravity: {x, y: 0, z: 9.8}, interval: 16}));""")
        alert = self.wait(a, lambda d: d.find_elements(By.CSS_SELECTOR, "[role=alertdialog]"), "the shake alert")[0]
        self.assertEqual(alert.find_element(By.TAG_NAME, "h2").text, "Undo Typing")
        # A gentle movement asks nothing.
        [btn for btn in alert.find_elements(By.TAG_NAME, "button") if btn.text == "Cancel"][0].click()
        self.wait(a, lambda d: not d.find_elements(By.CSS_SELECTOR, "[role=alertdialog]"), "dismissed")
        a.execute_script("""for (const x of [3, -3]) window.dispatchEvent(new DeviceMotionEvent('devicemotion', {acceleration: {x, y: 0, z: 0}}));""")
        time.sleep(0.5)
        self.assertFalse(a.find_elements(By.CSS_SELECTOR, "[role=alertdialog]"), "no alert for a gentle movement")

    def axe(self, b, where):
        """axe-core on the page as it is: the serious and critical violations (none expected), each with where it is."""
        self.assertIsNotNone(AXE, "axe-core's script not found: run scripts/test (it installs axe-selenium-python into .build-venv)")
        with open(AXE) as f:
            b.execute_script(f.read())
        result = b.execute_async_script("const done = arguments[0]; axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations))")
        bad = ["%s (%s): %s" % (v["id"], v["impact"], [n["target"] for n in v["nodes"]][:4]) for v in result if v["impact"] in ("serious", "critical")]
        self.assertEqual(bad, [], "axe on %s" % where)
        return result

    def test_8g_every_screen_passes_axe_and_works_at_375_px(self):
        self.shared_doc("axe-8", "some text")
        t = self.terminal("alice")
        assert t.request("create_doc", doc="axe-gone", title="Gone")["ok"]
        assert t.request("delete_doc", doc="axe-gone")["ok"]
        t.close()
        b = browser()
        self.pages.append(b)
        b.get("http://127.0.0.1:%d/" % self.server.port)
        self.wait(b, lambda d: d.find_element(By.ID, "signin").is_displayed(), "the sign-in form")
        self.axe(b, "the sign-in form")
        a = self.page("alice")
        self.home(a)
        a.find_element(By.CSS_SELECTOR, "#deleted-box summary").click()
        self.axe(a, "the home screen")
        self.open_row(a, "axe-8")
        self.wait(a, lambda d: self.text_of(d) == "some text", "the document")
        self.button(a, "changes-toggle").click()
        self.axe(a, "a document, with Your changes")
        self.button(a, "history").click()
        self.wait(a, lambda d: "of" in d.find_element(By.ID, "scrub-version").text, "the history slider")
        self.axe(a, "the history slider")
        self.button(a, "scrub-cancel").click()
        self.button(a, "share").click()
        self.wait(a, lambda d: d.find_elements(By.CSS_SELECTOR, "#members li"), "the Share dialog")
        self.axe(a, "the Share dialog")
        self.button(a, "share-done").click()
        self.type_into(a, "!")
        self.wait(a, lambda d: self.button(d, "undo").text == "Undo Typing", "something to undo")
        self.button(a, "shake").click()
        self.wait(a, lambda d: d.find_elements(By.CSS_SELECTOR, "[role=alertdialog]"), "the shake alert")
        self.axe(a, "the shake alert")
        self.assertEqual(a.switch_to.active_element.tag_name, "button", "the alert takes the focus")
        a.switch_to.active_element.send_keys(Keys.ESCAPE)
        self.wait(a, lambda d: not d.find_elements(By.CSS_SELECTOR, "[role=alertdialog]"), "Escape to cancel the alert")
        # A phone's width: nothing wider than the screen, every control reachable.
        a.set_window_size(375, 812)
        self.wait(a, lambda d: d.execute_script("return document.documentElement.clientWidth") <= 375, "a 375 px viewport")
        for where in ("document", "home"):
            if where == "home":
                self.button(a, "home").click()
                self.home(a)
            overflow = a.execute_script("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
            self.assertLessEqual(overflow, 0, "the %s is no wider than 375 px (%d px more)" % (where, overflow))
            self.shot(a, "phone-%s" % where)
            self.axe(a, "the %s at 375 px" % where)

    def test_8h_a_kept_edit_the_server_refuses_is_said_not_swallowed(self):
        self.shared_doc("refused-8", "text")
        a = self.page("alice", "refused-8")
        self.wait(a, lambda d: self.text_of(d) == "text", "the document")
        self.server.stop()
        self.wait(a, lambda d: d.find_element(By.ID, "status").text.startswith(("reconnecting", "offline")), "the page to see the server gone")
        time.sleep(2)   # the page's next try is seconds away (its backoff grows)
        self.type_into(a, " kept")
        self.wait(a, lambda d: "1 change waiting" in d.find_element(By.ID, "status").text, "the edit kept")
        # Meanwhile bob deletes the text box: the kept edit can no longer apply.
        self.server.start()
        t = self.terminal("bob")
        r = t.request("submit", doc="refused-8", tx="bob-del", base=1, ops=[{"op": "delete", "node": "t"}])
        self.assertTrue(r["ok"], r)
        t.close()
        self.wait(a, lambda d: d.find_element(By.ID, "status").text == "connected", "the page back", seconds=30)
        self.wait(a, lambda d: d.find_element(By.ID, "error").text != "", "the refusal said on the page")
        self.assertIn('node "t" does not exist', a.find_element(By.ID, "error").text, "the server's own words")
        self.wait(a, lambda d: self.text_of(d) is None and self.settled(d), "the page shows what the server has: no text box")
        self.assertIsNone(self.server.text("refused-8", "t"))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    print("%d passed, %d failed" % (result.testsRun - failed, failed))
    sys.exit(1 if failed else 0)
