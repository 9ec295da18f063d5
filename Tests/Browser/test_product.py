"""The web editor as a product, in a real browser (issue 48; harness.py): your
documents, a title, the address and the tab's sign-in, sharing between two
pages, delete and bring back, boxes by mouse and keys, Your changes, edits kept
across a reload with the server away, a phone's shake, axe-core and 375 px, a
kept edit the server refuses. Run by test_editor.py (or alone, the same way).
"""
import json
import os
import sys
import time
import unittest

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BrowserTestCase, browser  # noqa: E402


class ProductTests(BrowserTestCase):
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
