// The Campaigns pages' script (loaded on them only, after app.js). A CSV, uploaded or pasted,
// goes to POST /api/campaigns as text/csv: first as a dry run, whose answer (every invalid row
// with all its errors, each target's named by its network) is shown as a table, then, once the
// dry run passed for exactly that text and those options, for real with an Idempotency-Key. A
// campaign's page follows its one stream (GET /api/campaigns/:id/stream) until done. Everything
// the API or a CSV says is written with textContent only.
(function () {
  'use strict';

  var csrf = (document.querySelector('meta[name="csrf-token"]') || {}).content || '';
  var names = { linkedin: 'LinkedIn', instagram: 'Instagram', youtube: 'YouTube', pinterest: 'Pinterest', tiktok: 'TikTok',
    threads: 'Threads', facebook: 'Facebook', twitter_x: 'X', bluesky: 'Bluesky' };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }

  function flash(msg, kind) {
    var box = document.getElementById('flash');
    if (!box) { return; }
    box.textContent = msg;
    box.className = 'flash ' + (kind || 'error');
    box.hidden = false;
  }
  function clearFlash() {
    var box = document.getElementById('flash');
    if (box) { box.hidden = true; box.textContent = ''; }
  }

  function newKey() {
    if (window.crypto && typeof window.crypto.randomUUID === 'function') { return window.crypto.randomUUID(); }
    var b = new Uint8Array(16);
    window.crypto.getRandomValues(b);
    return Array.prototype.map.call(b, function (x) { return ('0' + x.toString(16)).slice(-2); }).join('');
  }

  // parseCSV reads RFC 4180 text into records, only to show each row's text beside its errors:
  // the API's reading is the one that counts. It returns null on text it cannot read.
  function parseCSV(text) {
    if (text.charCodeAt(0) === 0xfeff) { text = text.slice(1); }
    var rows = [], row = [], field = '', i = 0, quoted = false;
    while (i < text.length) {
      var ch = text[i];
      if (quoted) {
        if (ch === '"' && text[i + 1] === '"') { field += '"'; i += 2; continue; }
        if (ch === '"') { quoted = false; i++; continue; }
        field += ch; i++; continue;
      }
      if (ch === '"' && field === '') { quoted = true; i++; continue; }
      if (ch === ',') { row.push(field); field = ''; i++; continue; }
      if (ch === '\r' && text[i + 1] === '\n') { i++; continue; }
      if (ch === '\n') { row.push(field); rows.push(row); row = []; field = ''; i++; continue; }
      field += ch; i++;
    }
    if (quoted) { return null; }
    if (field !== '' || row.length) { row.push(field); rows.push(row); }
    return rows.filter(function (r) { return !(r.length === 1 && r[0] === ''); });
  }

  // errorItem shows one error: a target's or a field's name first ("instagram: …" names the
  // network, "platforms: …" the field).
  function errorItem(msg) {
    var li = el('li');
    var m = /^([a-z_]+): ([\s\S]*)$/.exec(msg);
    if (m) {
      li.appendChild(el('span', 'net', names[m[1]] || m[1]));
      li.appendChild(document.createTextNode(': ' + m[2]));
    } else {
      li.textContent = msg;
    }
    return li;
  }

  function table(caption, heads) {
    var t = el('table', 'list');
    t.appendChild(el('caption', 'sr-only', caption));
    var tr = el('tr');
    heads.forEach(function (h) { var th = el('th', '', h); th.scope = 'col'; tr.appendChild(th); });
    var thead = el('thead');
    thead.appendChild(tr);
    t.appendChild(thead);
    var tb = el('tbody');
    t.appendChild(tb);
    return { table: t, body: tb };
  }

  function cell(label, content) {
    var td = el('td');
    td.setAttribute('data-label', label);
    if (typeof content === 'string' || typeof content === 'number') { td.textContent = String(content); } else if (content) { td.appendChild(content); }
    return td;
  }

  // ---- the new campaign form ----
  var form = document.getElementById('campaign-form');
  if (form) {
    var text = document.getElementById('camp-csv');
    var file = document.getElementById('camp-file');
    var submit = document.getElementById('camp-submit');
    var out = document.getElementById('dry-run');
    var checked = null; // the request a dry run passed: {query, csv, key}

    var query = function (dry) {
      var q = new URLSearchParams();
      q.set('publish', document.getElementById('camp-publish').value);
      var name = document.getElementById('camp-name').value.trim();
      if (name) { q.set('name', name); }
      if (dry) { q.set('dry_run', 'true'); }
      return q.toString();
    };
    var send = function (q, csv, key) {
      var headers = { 'Accept': 'application/json', 'Content-Type': 'text/csv; charset=utf-8', 'X-CSRF-Token': csrf };
      if (key) { headers['Idempotency-Key'] = key; }
      return fetch('/api/campaigns?' + q, { method: 'POST', credentials: 'same-origin', headers: headers, body: csv }).then(function (r) {
        return r.text().then(function (t) {
          var data = null;
          try { data = t ? JSON.parse(t) : null; } catch (e) { data = null; }
          return { status: r.status, ok: r.ok, data: data };
        });
      });
    };
    // Any change to what would be sent asks for a new dry run.
    var stale = function () {
      checked = null;
      submit.disabled = true;
    };
    form.addEventListener('input', stale);
    form.addEventListener('change', stale);
    file.addEventListener('change', function () {
      var f = file.files && file.files[0];
      if (!f) { return; }
      f.text().then(function (t) { text.value = t; stale(); }, function () { flash('The file could not be read.'); });
    });

    var showRows = function (rows, csv) {
      var records = parseCSV(csv) || [];
      var t = table('Rows with errors', ['Row', 'Text', 'Errors']);
      t.table.id = 'dry-rows';
      rows.forEach(function (r) {
        var tr = el('tr');
        tr.setAttribute('data-row', r.row);
        tr.appendChild(cell('Row', r.row));
        var rec = records[r.row]; // records[0] is the header
        var head = records[0] || [];
        var ci = head.map(function (h) { return String(h).trim().toLowerCase(); }).indexOf('content');
        var content = rec && ci >= 0 ? String(rec[ci] || '') : '';
        tr.appendChild(cell('Text', content.length > 80 ? content.slice(0, 79) + '…' : content));
        var ul = el('ul', 'dry-errors');
        (r.errors || []).forEach(function (m) { ul.appendChild(errorItem(m)); });
        tr.appendChild(cell('Errors', ul));
        t.body.appendChild(tr);
      });
      return t.table;
    };

    // showRefusal shows a refused campaign, dry run or not: every invalid row with its errors, or
    // the header's, or the API's message.
    var showRefusal = function (res, csv) {
      out.textContent = '';
      var err = (res.data && res.data.error) || {};
      var det = err.details || {};
      var msg = err.message || ('The server answered ' + res.status + '.');
      if (det.rows && det.rows.length) {
        msg = det.rows.length + ' row' + (det.rows.length === 1 ? ' has' : 's have') +
          ' errors, listed below by data row (the header is not counted). Nothing was created: fix them and check again.';
      }
      var bad = el('p', 'check-summary bad', msg);
      bad.id = 'dry-bad';
      out.appendChild(bad);
      if (det.header && det.header.length) {
        var ul = el('ul', 'dry-errors');
        ul.id = 'dry-header';
        det.header.forEach(function (m) { ul.appendChild(el('li', '', m)); });
        out.appendChild(ul);
      }
      if (det.rows && det.rows.length) { out.appendChild(showRows(det.rows, csv)); }
      out.scrollIntoView({ block: 'nearest' });
    };

    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      clearFlash();
      var csv = text.value;
      if (!csv.trim()) { flash('Paste the CSV or choose a file first.'); text.focus(); return; }
      var q = query(true);
      out.textContent = '';
      out.setAttribute('aria-busy', 'true');
      send(q, csv).then(function (res) {
        out.textContent = '';
        if (res.ok && res.data && res.data.valid) {
          var d = res.data;
          var p = el('p', 'check-summary', 'All ' + d.posts + ' post' + (d.posts === 1 ? '' : 's') + ' are valid: ' +
            d.targets + ' network post' + (d.targets === 1 ? '' : 's') + ' in all. Nothing has been created yet.');
          p.id = 'dry-ok';
          out.appendChild(p);
          var t = table('Network posts by network', ['Network', 'Posts']);
          Object.keys(d.by_platform || {}).sort().forEach(function (k) {
            var tr = el('tr');
            tr.appendChild(cell('Network', names[k] || k));
            tr.appendChild(cell('Posts', d.by_platform[k]));
            t.body.appendChild(tr);
          });
          out.appendChild(t.table);
          checked = { query: query(false), csv: csv, key: newKey() };
          submit.disabled = false;
          submit.focus();
          return;
        }
        showRefusal(res, csv);
      }, function () {
        flash('Herald could not be reached. Try again.');
      }).finally(function () { out.removeAttribute('aria-busy'); });
    });

    submit.addEventListener('click', function () {
      if (!checked || submit.disabled) { return; }
      submit.disabled = true;
      clearFlash();
      var c = checked;
      send(c.query, c.csv, c.key).then(function (res) {
        if (res.ok && res.data && res.data.campaign_id) {
          location.assign('/campaigns/' + encodeURIComponent(res.data.campaign_id));
          return;
        }
        if (res.status === 400) {
          // Something changed since the dry run (an account disconnected, say): the rows again.
          showRefusal(res, c.csv);
          checked = null;
          return;
        }
        var err = (res.data && res.data.error) || {};
        flash(err.message || ('The server answered ' + res.status + '.'));
        submit.disabled = false;
      }, function () {
        // The same key: sent again, the campaign is created once.
        flash('Herald could not be reached. Submit again: the campaign will be created once.');
        submit.disabled = false;
      });
    });
  }

  // ---- a campaign's page: its one stream ----
  var camp = document.getElementById('campaign');
  if (camp && camp.getAttribute('data-follow') === 'true' && typeof EventSource === 'function') {
    var id = camp.getAttribute('data-campaign-id');
    var live = document.getElementById('camp-live');
    var done = false;
    var es = new EventSource('/api/campaigns/' + encodeURIComponent(id) + '/stream', { withCredentials: true });
    var seen = 0;
    es.addEventListener('progress', function (ev) {
      var d;
      try { d = JSON.parse(ev.data); } catch (e) { return; }
      seen++;
      var row = document.querySelector('#camp-posts tr[data-post-id="' + CSS.escape(d.post_id) + '"]');
      var li = row && row.querySelector('li[data-target="' + Number(d.target) + '"]');
      if (!li) { return; }
      var state = li.querySelector('[data-state]');
      var phase = String(d.phase || '');
      var word = phase === 'platform_success' ? 'published' : phase === 'platform_failed' ? 'failed' : 'publishing';
      state.textContent = word;
      state.className = 'badge badge-' + word;
      li.querySelector('[data-error]').textContent = word === 'failed' ? (d.message || '') : '';
      live.textContent = 'Following the campaign live: ' + seen + ' step' + (seen === 1 ? '' : 's') + ' so far.';
    });
    es.addEventListener('done', function () {
      done = true;
      es.close();
      live.textContent = 'Every post has its outcome.';
      // The page read again shows the totals, each post's status and the retry.
      location.reload();
    });
    es.onerror = function () {
      if (!done && es.readyState === EventSource.CLOSED) {
        live.textContent = 'The live stream stopped. Reload the page to follow the campaign again.';
      }
    };
  }
})();
