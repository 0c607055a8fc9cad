// Herald's dashboard script: no framework, no build step. It calls the dashboard's JSON routes
// (/api/*) with the session's CSRF token, and writes what they answer with textContent only, so
// nothing a user or a network wrote is ever parsed as HTML.
(function () {
  'use strict';

  var csrf = (document.querySelector('meta[name="csrf-token"]') || {}).content || '';
  var userZone = (document.querySelector('meta[name="user-timezone"]') || {}).content || 'UTC';

  // api calls a dashboard route; it resolves with the parsed body and rejects with an Error
  // carrying the API's message.
  function api(method, path, body) {
    var opt = { method: method, credentials: 'same-origin', headers: { 'Accept': 'application/json', 'X-CSRF-Token': csrf } };
    if (body !== undefined) {
      opt.headers['Content-Type'] = 'application/json';
      opt.body = JSON.stringify(body);
    }
    return fetch(path, opt).then(function (r) {
      return r.text().then(function (text) {
        var data = null;
        if (text) { try { data = JSON.parse(text); } catch (e) { data = null; } }
        if (!r.ok) {
          var msg = (data && data.error && data.error.message) || ('the server answered ' + r.status);
          var err = new Error(msg);
          err.status = r.status;
          throw err;
        }
        return data;
      });
    });
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }

  function safeURL(u) {
    try {
      var p = new URL(u, location.href);
      return (p.protocol === 'https:' || p.protocol === 'http:') ? p.href : null;
    } catch (e) { return null; }
  }

  var flashBox = document.getElementById('flash');
  function flash(msg, kind) {
    if (!flashBox) { return; }
    flashBox.textContent = msg;
    flashBox.className = 'flash ' + (kind || 'error');
    flashBox.hidden = false;
    if (kind !== 'ok') { flashBox.scrollIntoView({ block: 'nearest' }); }
  }

  // After a reload, a message left by the previous page.
  try {
    var left = sessionStorage.getItem('herald.flash');
    if (left) { sessionStorage.removeItem('herald.flash'); flash(left, 'ok'); }
  } catch (e) { /* storage off */ }
  function reloadWith(msg) {
    try { if (msg) { sessionStorage.setItem('herald.flash', msg); } } catch (e) { /* storage off */ }
    location.reload();
  }

  // confirmDialog asks through the page's <dialog>; it resolves true on confirmation. The close
  // event is dispatched after the dialog has closed, so a dialog opened again at once can see
  // the close event of its previous opening: each opening has its number, and an answer counts
  // only for the opening that is current and closed.
  var dialogOpening = 0;
  function confirmDialog(message) {
    var d = document.getElementById('confirm-dialog');
    if (!d || typeof d.showModal !== 'function') { return Promise.resolve(window.confirm(message)); }
    document.getElementById('confirm-message').textContent = message;
    var mine = ++dialogOpening;
    return new Promise(function (resolve) {
      d.addEventListener('close', function onClose() {
        if (mine === dialogOpening && d.open) { return; } // the previous opening's close
        d.removeEventListener('close', onClose);
        resolve(mine === dialogOpening && d.returnValue === 'ok');
      });
      d.returnValue = '';
      d.showModal();
      document.getElementById('confirm-ok').focus();
    });
  }

  // formBody turns a form's fields into the JSON body: data-array checkboxes into arrays,
  // data-bool checkboxes into booleans, numbers into numbers; data-optional fields are left out
  // when empty, data-null-empty fields become null.
  function formBody(form) {
    var body = {};
    Array.prototype.forEach.call(form.elements, function (f) {
      if (!f.name || f.disabled || f.hasAttribute('data-skip')) { return; }
      if (f.type === 'checkbox' && f.hasAttribute('data-array')) {
        if (!body[f.name]) { body[f.name] = []; }
        if (f.checked) { body[f.name].push(f.value); }
        return;
      }
      if (f.type === 'checkbox') { body[f.name] = f.checked; return; }
      if (f.type === 'radio' && !f.checked) { return; }
      var v = f.value;
      if (v === '' && f.hasAttribute('data-optional')) { return; }
      if (v.trim() === '' && f.hasAttribute('data-null-empty')) { body[f.name] = null; return; }
      if (f.type === 'number' && v !== '') { v = Number(v); }
      body[f.name] = v;
    });
    return body;
  }

  // reveal shows a value the server shows once (an API key, a webhook secret).
  function reveal(label, value) {
    var box = document.getElementById('secret-reveal');
    if (!box) { return; }
    document.getElementById('reveal-h').textContent = label + ': copy it now';
    document.getElementById('reveal-value').textContent = value;
    box.hidden = false;
    box.focus();
    box.scrollIntoView({ block: 'start' });
  }

  var then = {
    reload: function (form) { reloadWith(form.getAttribute('data-success') || 'Done.'); },
    reset: function (form) { form.reset(); flash(form.getAttribute('data-success') || 'Done.', 'ok'); },
    authorize: function (form, data) {
      var u = data && safeURL(data.authorization_url);
      if (!u) { flash('The server did not give an authorization address.'); return; }
      location.assign(u);
    }
  };

  document.addEventListener('submit', function (ev) {
    var form = ev.target;
    if (!form.hasAttribute('data-api')) { return; }
    ev.preventDefault();
    var ask = form.getAttribute('data-confirm');
    (ask ? confirmDialog(ask) : Promise.resolve(true)).then(function (ok) {
      if (!ok) { return; }
      var method = form.getAttribute('data-method') || 'POST';
      var body = form.getAttribute('data-body') === 'none' ? undefined : formBody(form);
      var buttons = form.querySelectorAll('button');
      buttons.forEach(function (b) { b.disabled = true; });
      form.setAttribute('aria-busy', 'true');
      api(method, form.getAttribute('data-api'), body).then(function (data) {
        var field = form.getAttribute('data-reveal');
        var next = form.getAttribute('data-then') || 'reload';
        if (field && data && data[field]) {
          reveal(form.getAttribute('data-reveal-label') || 'The new value', data[field]);
        } else if (next.indexOf('go:') === 0) {
          location.assign(next.slice(3));
        } else {
          then[next](form, data);
        }
      }).catch(function (err) {
        flash(err.message);
      }).finally(function () {
        buttons.forEach(function (b) { b.disabled = false; });
        form.removeAttribute('aria-busy');
      });
    });
  });

  document.addEventListener('click', function (ev) {
    var t = ev.target.closest('[data-copy], [data-reload]');
    if (!t) { return; }
    if (t.hasAttribute('data-reload')) { location.reload(); return; }
    var src = document.querySelector(t.getAttribute('data-copy'));
    var status = t.parentNode.querySelector('.copy-status');
    var done = function (msg) { if (status) { status.textContent = msg; } };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(src.textContent).then(function () { done('Copied.'); }, function () {
        selectText(src); done('Selected: press Ctrl+C to copy.');
      });
    } else { selectText(src); done('Selected: press Ctrl+C to copy.'); }
  });
  function selectText(node) {
    var r = document.createRange();
    r.selectNodeContents(node);
    var s = window.getSelection();
    s.removeAllRanges();
    s.addRange(r);
  }

  // Time zone selects list the browser's IANA zones, the current one kept.
  document.querySelectorAll('select[data-timezones]').forEach(function (sel) {
    var zones = [];
    try { zones = Intl.supportedValuesOf('timeZone'); } catch (e) { zones = []; }
    if (zones.indexOf('UTC') < 0) { zones = ['UTC'].concat(zones); }
    var current = sel.value;
    zones.forEach(function (z) {
      if (z === current) { return; }
      var o = el('option', null, z);
      o.value = z;
      sel.appendChild(o);
    });
  });

  // ---- the post page's timeline ----
  var timeline = document.getElementById('events');
  if (timeline) {
    api('GET', timeline.getAttribute('data-events')).then(function (data) {
      timeline.textContent = '';
      var evs = (data && data.events) || [];
      if (!evs.length) { timeline.appendChild(el('li', 'muted', 'Nothing has happened yet.')); }
      evs.forEach(function (e) {
        var li = el('li');
        var t = el('time', null, fmtTime(e.created_at));
        t.dateTime = e.created_at;
        li.appendChild(t);
        li.appendChild(document.createTextNode(' '));
        li.appendChild(el('strong', null, (e.platform ? networkName(e.platform) + ': ' : '') + e.phase.replace(/_/g, ' ')));
        if (e.message) { li.appendChild(document.createTextNode(' — ' + e.message)); }
        timeline.appendChild(li);
      });
    }).catch(function (err) {
      timeline.textContent = '';
      timeline.appendChild(el('li', 'target-error', 'The timeline could not be read: ' + err.message));
    }).finally(function () { timeline.removeAttribute('aria-busy'); });
  }

  function fmtTime(iso) {
    try {
      return new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium', timeZone: userZone }).format(new Date(iso));
    } catch (e) { return iso; }
  }

  var names = { linkedin: 'LinkedIn', instagram: 'Instagram', youtube: 'YouTube', pinterest: 'Pinterest', tiktok: 'TikTok',
    threads: 'Threads', facebook: 'Facebook', twitter_x: 'X', bluesky: 'Bluesky' };
  function networkName(p) { return names[p] || p; }

  // ---- compose ----
  var compose = document.getElementById('compose');
  if (compose) { setupCompose(compose); }

  // countText counts a text as a network does (http/web/funcs.go, textLimits).
  var segmenter = (typeof Intl !== 'undefined' && Intl.Segmenter) ? new Intl.Segmenter(undefined, { granularity: 'grapheme' }) : null;
  function graphemes(s) {
    if (!segmenter) { return Array.from(s).length; }
    var n = 0;
    for (var it = segmenter.segment(s)[Symbol.iterator](), r = it.next(); !r.done; r = it.next()) { n++; }
    return n;
  }
  function utf8Bytes(s) { return new TextEncoder().encode(s).length; }
  function xLength(s) {
    // X's weighted length: every URL counts 23; code points in the light ranges 1, others 2.
    var n = 0;
    s = s.replace(/https?:\/\/\S+/g, function () { n += 23; return ''; });
    Array.from(s.normalize('NFC')).forEach(function (ch) {
      var c = ch.codePointAt(0);
      var light = (c <= 0x10FF) || (c >= 0x2000 && c <= 0x200D) || (c >= 0x2010 && c <= 0x201F) || (c >= 0x2032 && c <= 0x2037);
      n += light ? 1 : 2;
    });
    return n;
  }
  function countText(s, how) {
    switch (how) {
      case 'x': return xLength(s);
      case 'graphemes': return graphemes(s);
      case 'bytes': return utf8Bytes(s);
      case 'utf16': return s.length;
      case 'threads':
        var n = 0;
        if (!segmenter) { return Array.from(s).length; }
        for (var it = segmenter.segment(s)[Symbol.iterator](), r = it.next(); !r.done; r = it.next()) {
          n += /\p{Extended_Pictographic}/u.test(r.value.segment) ? utf8Bytes(r.value.segment) : 1;
        }
        return n;
      default: return Array.from(s).length;
    }
  }

  function setupCompose(form) {
    var text = form.querySelector('#content');
    var counts = document.getElementById('counts');
    var boxes = form.querySelectorAll('input[name="platforms"]');
    var submit = document.getElementById('submit-post');
    var schedFields = document.getElementById('schedule-fields');
    var media = []; // {id, name}
    var uploading = 0;

    function selected() {
      return Array.prototype.filter.call(boxes, function (b) { return b.checked; });
    }
    function recount() {
      counts.textContent = '';
      var seen = {};
      selected().forEach(function (b) {
        var p = b.getAttribute('data-platform');
        if (seen[p]) { return; }
        seen[p] = true;
        var max = Number(b.getAttribute('data-limit'));
        var n = countText(text.value, b.getAttribute('data-count'));
        var li = el('li', n > max ? 'over' : '', b.getAttribute('data-network') + ': ' + n + ' / ' + max);
        li.setAttribute('data-platform', p);
        counts.appendChild(li);
      });
    }
    text.addEventListener('input', recount);
    boxes.forEach(function (b) { b.addEventListener('change', recount); });
    form.querySelectorAll('input[name="when"]').forEach(function (r) {
      r.addEventListener('change', function () {
        var later = form.querySelector('input[name="when"]:checked').value === 'later';
        schedFields.hidden = !later;
        submit.textContent = later ? 'Schedule' : 'Publish now';
      });
    });

    // Media: presign, PUT with progress, confirm.
    var list = document.getElementById('media-list');
    document.getElementById('media-file').addEventListener('change', function (ev) {
      Array.prototype.forEach.call(ev.target.files, upload);
      ev.target.value = '';
    });
    function upload(file) {
      var li = el('li');
      var name = el('span', 'media-name', file.name);
      var bar = el('progress');
      bar.max = 1; bar.value = 0;
      bar.setAttribute('aria-label', 'Upload of ' + file.name);
      var state = el('span', 'media-state muted', 'uploading…');
      li.appendChild(name); li.appendChild(state); li.appendChild(bar);
      list.appendChild(li);
      uploading++;
      var type = file.type || 'application/octet-stream';
      api('POST', '/api/media/presign', { filename: file.name, content_type: type, size_bytes: file.size }).then(function (pre) {
        return new Promise(function (resolve, reject) {
          var x = new XMLHttpRequest();
          x.open('PUT', pre.upload_url);
          x.setRequestHeader('Content-Type', type);
          x.upload.onprogress = function (e) { if (e.lengthComputable) { bar.value = e.loaded / e.total; } };
          x.onload = function () {
            if (x.status >= 200 && x.status < 300) { resolve(pre); } else {
              var msg = 'the upload was refused (' + x.status + ')';
              try { msg = JSON.parse(x.responseText).error.message || msg; } catch (e) { /* not JSON */ }
              reject(new Error(msg));
            }
          };
          x.onerror = function () { reject(new Error('the upload failed')); };
          x.send(file);
        });
      }).then(function (pre) {
        return api('POST', '/api/media/confirm', { key: pre.key, storage_filename: pre.storage_filename,
          original_filename: file.name, content_type: type, size_bytes: file.size });
      }).then(function (m) {
        bar.value = 1;
        state.textContent = 'ready';
        state.className = 'media-state';
        var entry = { id: m.id, name: file.name };
        media.push(entry);
        li.setAttribute('data-media-id', m.id);
        var rm = el('button', 'secondary', 'Remove');
        rm.type = 'button';
        rm.setAttribute('aria-label', 'Remove ' + file.name);
        rm.addEventListener('click', function () {
          media = media.filter(function (x) { return x !== entry; });
          li.remove();
        });
        li.appendChild(rm);
      }).catch(function (err) {
        state.textContent = 'failed: ' + err.message;
        state.className = 'media-state target-error';
      }).finally(function () { uploading--; });
    }

    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      var ids = selected().map(function (b) { return b.value; });
      if (uploading) { flash('Wait for the uploads to finish.'); return; }
      // The post's rules (text or media present, the accounts, each network's limits, which the
      // counts above only show) are the server's one check: its refusal names the rule.
      var body = { content: text.value, platforms: ids, media: media.map(function (m) { return m.id; }) };
      var later = form.querySelector('input[name="when"]:checked').value === 'later';
      submit.disabled = true;
      if (later) {
        var d = document.getElementById('sched-date').value, t = document.getElementById('sched-time').value;
        if (!d || !t) { flash('Choose a date and a time.'); submit.disabled = false; return; }
        body.scheduledAt = d + 'T' + t + ':00';
        body.timezone = document.getElementById('sched-zone').value;
        api('POST', '/api/posts/schedule', body).then(function (post) {
          location.assign('/posts/' + encodeURIComponent(post.id));
        }).catch(function (err) { flash(err.message); submit.disabled = false; });
        return;
      }
      api('POST', '/api/posts/publish', body).then(function (acc) {
        // Accepted: the form is cleared for the next post (the accounts stay chosen) and opens
        // again once the job is done; the progress below tells what became of this one.
        follow(acc, selected(), function () { submit.disabled = false; });
        text.value = '';
        media = [];
        list.textContent = '';
        recount();
      }).catch(function (err) { flash(err.message); submit.disabled = false; });
    });
  }

  // phaseLabel and phaseBadge name a target's phase as people read it.
  var phases = { platform_success: ['published', 'published'], platform_failed: ['failed', 'failed'],
    platform_uploading: ['uploading', 'processing'] };
  function phaseLabel(p) { return phases[p] ? phases[p][0] : String(p || '').replace(/_/g, ' '); }
  function phaseBadge(p) { return 'badge phase badge-' + (phases[p] ? phases[p][1] : p); }

  // follow shows a job's progress live from its event stream until done, then the links to the
  // published posts; finished, it calls done. A row per chosen account: progress events name
  // the network only (they move its first unfinished row), the final statuses name the account.
  function follow(acc, targets, done) {
    var box = document.getElementById('progress');
    var summary = document.getElementById('progress-summary');
    var bar = document.getElementById('progress-bar');
    var ul = document.getElementById('progress-targets');
    var links = document.getElementById('progress-links');
    box.hidden = false;
    box.removeAttribute('data-done');
    box.scrollIntoView({ block: 'start' });
    ul.textContent = '';
    links.textContent = '';
    bar.value = 0;
    var rows = [];
    targets.forEach(function (b) {
      var li = el('li');
      li.setAttribute('data-platform', b.getAttribute('data-platform'));
      li.setAttribute('data-account', b.value);
      li.appendChild(el('span', 'net', b.getAttribute('data-network')));
      var phase = el('span', 'badge badge-queued phase', 'queued');
      li.appendChild(phase);
      var msg = el('span', 'muted msg');
      li.appendChild(msg);
      ul.appendChild(li);
      rows.push({ li: li, platform: b.getAttribute('data-platform'), account: b.value, phase: phase, msg: msg, final: false });
    });
    function show(r, phase, message) {
      if (!r) { return; }
      r.phase.textContent = phaseLabel(phase);
      r.phase.className = phaseBadge(phase);
      r.final = phase === 'platform_success' || phase === 'platform_failed';
      r.msg.textContent = phase === 'platform_success' ? '' : (message || '');
      r.msg.className = phase === 'platform_failed' ? 'target-error msg' : 'muted msg';
    }
    function byPlatform(p) {
      return rows.filter(function (r) { return r.platform === p && !r.final; })[0];
    }
    function byAccount(id, p) {
      return rows.filter(function (r) { return r.account === id; })[0] || byPlatform(p);
    }
    summary.textContent = 'Queued.';
    var es = new EventSource('/api/jobs/' + encodeURIComponent(acc.tracking_id) + '/stream', { withCredentials: true });
    es.addEventListener('progress', function (e) {
      var d = JSON.parse(e.data);
      if (d.platform) { show(byPlatform(d.platform), d.phase, d.message); }
      bar.max = d.total || 1;
      bar.value = d.completed + d.failed;
      summary.textContent = d.status + ': ' + d.completed + ' published, ' + d.failed + ' failed, of ' + d.total + '.';
    });
    es.addEventListener('done', function (e) {
      es.close();
      var j = JSON.parse(e.data);
      (j.platform_statuses || []).forEach(function (s) { show(byAccount(s.connected_account_id, s.platform), s.phase, s.message); });
      bar.max = j.total || 1;
      bar.value = bar.max;
      summary.textContent = 'Done: ' + j.completed + ' published, ' + j.failed + ' failed, of ' + j.total + '.';
      api('GET', '/api/posts/' + encodeURIComponent(acc.post_id)).then(function (post) {
        (post.platforms || []).forEach(function (pl) {
          var r = rows.filter(function (x) { return x.account === pl.connected_account_id; })[0];
          var u = pl.platform_post_url && safeURL(pl.platform_post_url);
          if (!r || !u) { return; }
          var a = el('a', 'published-link', 'View on ' + networkName(pl.platform));
          a.href = u;
          a.rel = 'noopener noreferrer';
          a.target = '_blank';
          r.li.appendChild(a);
        });
        var detail = el('a', null, 'Open the post');
        detail.href = '/posts/' + encodeURIComponent(acc.post_id);
        links.appendChild(detail);
      }).catch(function (err) { flash(err.message); }).finally(function () {
        box.setAttribute('data-done', 'true');
        done();
      });
    });
    es.onerror = function () {
      if (es.readyState === EventSource.CLOSED) {
        summary.textContent = 'The progress stream closed; see the post for its outcome.';
        links.textContent = '';
        var detail = el('a', null, 'Open the post');
        detail.href = '/posts/' + encodeURIComponent(acc.post_id);
        links.appendChild(detail);
        done();
      }
    };
  }
})();
