"""The web editor in a real browser: headless Chromium against the real server
and PostgreSQL (harness.py). These: typing together, undo titles, shake, scrub,
quick actions, a server restarted under typing, a signed token. The product's
flows are in test_product.py; running this file runs both.

    python3 Tests/Browser/test_editor.py        (scripts/test runs it, with PG* set)
"""
import json
import os
import subprocess
import sys
import time
import unittest

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ROOT, BrowserTestCase, Terminal, browser  # noqa: E402


class EditorTests(BrowserTestCase):
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


if __name__ == "__main__":
    import test_product  # noqa: E402
    suite = unittest.TestSuite([unittest.defaultTestLoader.loadTestsFromTestCase(EditorTests),
                                unittest.defaultTestLoader.loadTestsFromModule(test_product)])
    if len(sys.argv) > 1:   # names of tests, as unittest takes them: EditorTests.test_1_…, ProductTests.test_8a_…
        suite = unittest.TestSuite(unittest.defaultTestLoader.loadTestsFromName(n, sys.modules[__name__] if n.startswith("EditorTests") else test_product)
                                   for n in sys.argv[1:])
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    failed = len(result.failures) + len(result.errors)
    print("%d passed, %d failed" % (result.testsRun - failed, failed))
    sys.exit(1 if failed else 0)
