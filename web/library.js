// library.js — the requests about a user's documents that need none of them
// open: list, create, rename, share, delete and bring back, quick actions and
// previews. RewindClient (client.js) extends this; the page's home screen uses it.

import { Connection } from "./connection.js";

export class Library extends Connection {
  /** `list_docs`: {docs: [{doc, title, role, owner, edited, last_editor}], next?, unreachable_shards?}, newest edit first
   *  (`unreachable_shards`: the page lacks the documents of those PostgreSQL clusters, down for now). */
  listDocuments({ limit, after } = {}) {
    return this.request("list_docs", { ...(limit ? { limit } : {}), ...(after ? { after } : {}) });
  }
  /** Every page of `list_docs` (at most `max` documents). */
  async allDocuments(max = 1000) {
    const docs = [];
    let after;
    do {
      const r = await this.listDocuments({ limit: 200, after });
      docs.push(...r.docs);
      after = r.next;
    } while (after && docs.length < max);
    return docs;
  }
  /** `doc_info`: {doc, title, owner, role, version, created, members?} (members for the owner). */
  documentInfo(doc = this.doc) { return this.request("doc_info", { doc }); }
  /** `create_doc` `{doc?, title?}` → {doc, version: 0}. */
  createDocument(fields = {}) { return this.request("create_doc", fields); }
  /** `rename`: a new title ("" or null removes it); terminals with it open get `renamed`. */
  rename(title, doc = this.doc) { return this.request("rename", { doc, title }); }
  /** `share`: gives `user` (a user name) `role` ("editor", "viewer"), or takes it away (null). Owner only. */
  share(user, role, doc = this.doc) { return this.request("share", { doc, user, role }); }
  /** Deletes a document you own (`delete_doc`); terminals on it get `closed` `deleted`. */
  deleteDocument(doc = this.doc) { return this.request("delete_doc", { doc }); }
  /** `undelete_doc`: brings back a document you deleted, within the retention. */
  undeleteDocument(doc) { return this.request("undelete_doc", { doc }); }
  /** `list_deleted`: {docs: [{doc, title, deleted, restorable_until}]}. */
  listDeleted() { return this.request("list_deleted", {}); }
  shortcut(item) { return this.request("shortcut", { shortcut: { type: item.type, info: item.info ?? {} } }); }
  peek(doc, fields = {}) { return this.request("peek", { doc, ...fields }); }
  pop(preview) { return this.request("pop", { preview }); }
}
