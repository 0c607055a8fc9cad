// Herald's dashboard script: no framework, no build step. It calls the dashboard's JSON routes
// (/api/*) with the session's CSRF token, and writes what they answer with textContent only, so
// nothing a user or a network wrote is ever parsed as HTML.
(function () {
  'use strict';

  var csrf = (document.querySelector('meta[name="csrf-token"]') || {}).content || '';
  var userZone = (document.querySelector('meta[name="user-timezone"]') || {}).content || 'UTC';

  // api calls a dashboard route; it resolves with the parsed body and rejects with an Error
  // carrying the API's message.
  function api(method, path, body, headers) {
    var opt = { method: method, credentials: 'same-origin', headers: { 'Accept': 'application/json', 'X-CSRF-Token': csrf } };
    Object.keys(headers || {}).forEach(function (k) { opt.headers[k] = headers[k]; });
    if (body !== undefined) {
      opt.headers['Content-Type'] = 'application/json';
      opt.body = JSON.stringify(body);
    }
    return fetch(path, opt).then(function (r) {
      return r.text().then(function (text) {
        var data = null;
        if (text) { try { data = JSON.parse(text); } catch (e) { data = null; } }
        if (!r.ok) {
          if (r.status === 401) { signinNeeded(); }
          var msg = (data && data.error && data.error.message) || ('the server answered ' + r.status);
          var err = new Error(msg);
          err.status = r.status;
          err.details = (data && data.error && data.error.details) || null;
          throw err;
        }
        return data;
      });
    });
  }

  // newKey is a random Idempotency-Key.
  function newKey() {
    if (window.crypto && crypto.randomUUID) { return crypto.randomUUID(); }
    var b = new Uint8Array(16);
    crypto.getRandomValues(b);
    return Array.prototype.map.call(b, function (x) { return ('0' + x.toString(16)).slice(-2); }).join('');
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

  // publishedURL is where a published target's link leads: the network's URL, or in sandbox mode
  // (the layout's sim-url) the simulator's page of the publication, as the post page's links.
  function publishedURL(pl) {
    var sim = document.querySelector('meta[name="sim-url"]');
    if (sim && sim.content && pl.platform_post_id) {
      return safeURL(sim.content + '/_sim/publication?id=' + encodeURIComponent(pl.platform_post_id) + '&platform=' + encodeURIComponent(pl.platform));
    }
    return pl.platform_post_url ? safeURL(pl.platform_post_url) : null;
  }

  var flashBox = document.getElementById('flash');
  var signinShown = false;
  function flash(msg, kind) {
    if (!flashBox || (signinShown && kind !== 'ok')) { return; } // the way back in stays in view
    flashBox.textContent = msg;
    flashBox.className = 'flash ' + (kind || 'error');
    flashBox.hidden = false;
    if (kind !== 'ok') { flashBox.scrollIntoView({ block: 'nearest' }); }
  }

  // signinNeeded says the session has ended, with a link to sign in that comes back to this page
  // (Compose restores what was written: its autosave).
  function signinNeeded() {
    if (!flashBox) { return; }
    flashBox.textContent = '';
    flashBox.appendChild(document.createTextNode('Your session has ended. '));
    var a = el('a', 'signin-link', 'Sign in again');
    a.href = '/signin?next=' + encodeURIComponent(location.pathname + location.search);
    flashBox.appendChild(a);
    flashBox.appendChild(document.createTextNode(' to carry on' + (document.getElementById('compose') ? ': what you wrote is kept in this browser.' : '.')));
    flashBox.className = 'flash error';
    flashBox.hidden = false;
    flashBox.scrollIntoView({ block: 'nearest' });
    signinShown = true;
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
  // A name with a dot (limits.accounts) is a field of a nested object; data-array checkboxes
  // that are also data-optional are left out when none is checked.
  function formBody(form) {
    var body = {};
    var optionalArrays = {};
    function slot(name) {
      var parts = name.split('.');
      var o = body;
      for (var i = 0; i < parts.length - 1; i++) {
        if (typeof o[parts[i]] !== 'object' || o[parts[i]] === null) { o[parts[i]] = {}; }
        o = o[parts[i]];
      }
      return { obj: o, key: parts[parts.length - 1] };
    }
    function set(name, v) { var s = slot(name); s.obj[s.key] = v; }
    Array.prototype.forEach.call(form.elements, function (f) {
      if (!f.name || f.disabled || f.hasAttribute('data-skip')) { return; }
      if (f.type === 'checkbox' && f.hasAttribute('data-array')) {
        var s = slot(f.name);
        if (!s.obj[s.key]) { s.obj[s.key] = []; }
        if (f.checked) { s.obj[s.key].push(f.value); }
        if (f.hasAttribute('data-optional')) { optionalArrays[f.name] = true; }
        return;
      }
      if (f.type === 'checkbox') { set(f.name, f.checked); return; }
      if (f.type === 'radio' && !f.checked) { return; }
      var v = f.value;
      if (v === '' && f.hasAttribute('data-optional')) { return; }
      if (v.trim() === '' && f.hasAttribute('data-null-empty')) { set(f.name, null); return; }
      if (f.type === 'number' && v !== '') { v = Number(v); }
      set(f.name, v);
    });
    Object.keys(optionalArrays).forEach(function (name) {
      var s = slot(name);
      if (!s.obj[s.key].length) { delete s.obj[s.key]; }
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
    // switched: the workspace switcher's choice is stored; the page is shown again in it, but a
    // post's page goes to the list (the post stays in the workspace left).
    switched: function (form) {
      var msg = form.getAttribute('data-success') || 'Done.';
      if (/^\/posts\/./.test(location.pathname)) {
        try { sessionStorage.setItem('herald.flash', msg); } catch (e) { /* storage off */ }
        location.assign('/posts');
        return;
      }
      reloadWith(msg);
    },
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
      if (form.hasAttribute('data-schedule')) {
        // A schedule form's date and time are one naive scheduledAt, read in its zone.
        body.scheduledAt = form.querySelector('[data-sched-date]').value + 'T' + form.querySelector('[data-sched-time]').value;
      }
      if (form.hasAttribute('data-target-errors')) { targetErrors(null); clearFieldErrors(null); }
      var errBox = form.querySelector('[data-error]');
      if (errBox) { errBox.hidden = true; errBox.textContent = ''; }
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
        // A refusal naming networks is written beside each network of the post's page.
        if (form.hasAttribute('data-target-errors') && err.details && err.details.targets) { targetErrors(err.details.targets); }
        // A form of a post (its text, its time) words the refusal and shows each error beside the
        // field it concerns.
        var worded = form.hasAttribute('data-target-errors') && placeRefusal(err, function (field) {
          var f = String(field || '').replace(/\[\d+\].*$/, '');
          var when = [form.querySelector('[data-sched-date]'), form.querySelector('[data-sched-time]'), form.querySelector('[name=timezone]')];
          if (f === 'content' && form.querySelector('[name=content]')) { return { fields: [form.querySelector('[name=content]')] }; }
          if (f === 'scheduledAt' && when[0]) { return { fields: when.slice(0, 2), clearOn: when }; }
          if (f === 'timezone' && when[2]) { return { fields: [when[2]], clearOn: when }; }
          return null;
        });
        if (worded && worded.placed) { return; }
        // A form with its own error box shows the refusal beside its fields.
        var box = form.querySelector('[data-error]');
        if (box) {
          box.textContent = worded ? worded.words : err.message;
          box.hidden = false;
          box.scrollIntoView({ block: 'nearest' });
        } else {
          flash(worded ? worded.words : err.message);
        }
      }).finally(function () {
        buttons.forEach(function (b) { b.disabled = false; });
        form.removeAttribute('aria-busy');
      });
    });
  });

  // targetErrors writes a check's refusal of each network beside its row of the post's page, in
  // the words the compose page uses; null clears them.
  function targetErrors(list) {
    document.querySelectorAll('#targets .check-error').forEach(function (p) { p.hidden = true; p.textContent = ''; });
    (list || []).forEach(function (tc) {
      var row = document.querySelector('#targets tr[data-account="' + tc.account_id + '"]');
      var p = row && row.querySelector('.check-error');
      if (!p || !(tc.errors || []).length) { return; }
      p.textContent = (tc.errors || []).map(function (e) { return humanError(e.field, e.message, null); }).join(' ');
      p.hidden = false;
    });
  }

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

  // A workspace's usage as CSV: the route answers CSV to Accept: text/csv, which a plain link
  // cannot send, so the script fetches it on the session and saves it as a file.
  document.addEventListener('click', function (ev) {
    var a = ev.target.closest('a[data-usage-csv]');
    if (!a) { return; }
    ev.preventDefault();
    fetch(a.getAttribute('href'), { credentials: 'same-origin', headers: { 'Accept': 'text/csv' } }).then(function (r) {
      if (!r.ok) {
        return r.json().catch(function () { return null; }).then(function (data) {
          throw new Error((data && data.error && data.error.message) || ('the server answered ' + r.status));
        });
      }
      return r.blob();
    }).then(function (blob) {
      var link = el('a');
      link.href = URL.createObjectURL(blob);
      link.download = a.getAttribute('data-usage-csv');
      document.body.appendChild(link);
      link.click();
      setTimeout(function () { URL.revokeObjectURL(link.href); link.remove(); }, 1000);
    }).catch(function (err) { flash('The usage could not be downloaded: ' + err.message); });
  });

  // On a phone the navigation folds behind its Menu button (app.css); without the script the
  // links stay shown.
  (function () {
    var nav = document.querySelector('header.top nav');
    var toggle = nav && nav.querySelector('.nav-toggle');
    if (!toggle) { return; }
    nav.classList.add('collapsible');
    toggle.addEventListener('click', function () {
      var open = nav.classList.toggle('open');
      toggle.setAttribute('aria-expanded', open ? 'true' : 'false');
    });
  })();

  // Time zone selects (every select[data-timezones]: Compose, a post's schedule, Settings) list
  // the browser's IANA zones, the current one kept, each with its offset from UTC now, in order
  // of offset; a search field before the select finds a zone by city or region ("kolkata",
  // "new york", "+05:30") and selects the first match.
  function zoneOffset(z) {
    try {
      var part = new Intl.DateTimeFormat('en-US', { timeZone: z, timeZoneName: 'longOffset' }).formatToParts(new Date())
        .filter(function (p) { return p.type === 'timeZoneName'; })[0];
      var v = part ? part.value.replace('GMT', 'UTC') : 'UTC';
      return v === 'UTC' ? 'UTC+00:00' : v;
    } catch (e) { return ''; }
  }
  function offsetMinutes(o) {
    var m = /^UTC([+-])(\d{2}):(\d{2})$/.exec(o);
    return m ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) : 0;
  }
  var renamedZones = { 'Asia/Calcutta': 'Asia/Kolkata', 'Asia/Saigon': 'Asia/Ho_Chi_Minh', 'Asia/Katmandu': 'Asia/Kathmandu',
    'Asia/Rangoon': 'Asia/Yangon', 'Europe/Kiev': 'Europe/Kyiv', 'America/Godthab': 'America/Nuuk', 'Atlantic/Faeroe': 'Atlantic/Faroe' };
  function zoneLabel(z, off) { return z.replace(/_/g, ' ') + (off ? ' (' + off + ')' : ''); }
  function setupZonePicker(sel) {
    var zones = [];
    try { zones = Intl.supportedValuesOf('timeZone'); } catch (e) { zones = []; }
    if (zones.indexOf('UTC') < 0) { zones = ['UTC'].concat(zones); }
    // Some browsers still list a few zones under their old names: the current names are shown.
    zones = zones.map(function (z) { return renamedZones[z] || z; });
    var current = sel.value;
    if (current && zones.indexOf(current) < 0) { zones.push(current); }
    var list = zones.map(function (z) { var off = zoneOffset(z); return { z: z, off: off, min: offsetMinutes(off) }; });
    list.sort(function (a, b) { return a.min - b.min || (a.z < b.z ? -1 : 1); });
    sel.textContent = '';
    list.forEach(function (x) {
      var o = el('option', null, zoneLabel(x.z, x.off));
      o.value = x.z;
      if (x.z === current) { o.selected = true; }
      sel.appendChild(o);
    });
    var find = el('input', 'zone-find');
    find.type = 'search';
    find.id = sel.id ? sel.id + '-find' : '';
    find.setAttribute('aria-label', 'Find a time zone by city');
    find.setAttribute('placeholder', 'Find by city, e.g. Kolkata');
    find.setAttribute('data-skip', '');
    find.setAttribute('autocomplete', 'off');
    sel.parentNode.insertBefore(find, sel);
    find.addEventListener('input', function () {
      var q = find.value.trim().toLowerCase().replace(/[_\s]+/g, ' ');
      if (!q) { return; }
      var hit = Array.prototype.filter.call(sel.options, function (o) { return o.textContent.toLowerCase().indexOf(q) >= 0; })[0];
      if (hit && sel.value !== hit.value) {
        sel.value = hit.value;
        sel.dispatchEvent(new Event('change', { bubbles: true }));
      }
    });
  }
  document.querySelectorAll('select[data-timezones]').forEach(setupZonePicker);

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

  // fmtTime writes a time as the server's pages do (http/web timefmt.go, formatWhen):
  // "Tue 1 Dec 2026, 09:30 UTC+05:30", 24-hour, in the user's zone, the zone as its offset
  // ("UTC" at offset zero), whatever the browser's language.
  function fmtTime(iso) {
    try {
      var parts = {};
      new Intl.DateTimeFormat('en-GB', { weekday: 'short', day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit',
        minute: '2-digit', hourCycle: 'h23', timeZoneName: 'longOffset', timeZone: userZone }).formatToParts(new Date(iso)).forEach(function (p) {
        parts[p.type] = p.value;
      });
      var zone = (parts.timeZoneName || 'GMT').replace('GMT', 'UTC').replace('\u2212', '-').replace(/^UTC[+-]00:00$/, 'UTC');
      return parts.weekday + ' ' + parts.day + ' ' + parts.month + ' ' + parts.year + ', ' + parts.hour + ':' + parts.minute + ' ' + zone;
    } catch (e) { return iso; }
  }

  // ---- a post's live analytics (GET /api/analytics/posts/:id), read after the page shows ----
  var postStats = document.getElementById('post-analytics');
  if (postStats) {
    var statsBody = postStats.querySelector('tbody');
    var statsNote = postStats.querySelector('[data-note]');
    var num = function (n) { return n === null || n === undefined ? '–' : String(n); };
    api('GET', postStats.getAttribute('data-analytics')).then(function (data) {
      statsBody.textContent = '';
      (data.publications || []).forEach(function (pub) {
        var tr = el('tr');
        tr.setAttribute('data-platform', pub.platform);
        [['Network', networkName(pub.platform)], ['Views', num(pub.views)], ['Likes', num(pub.likes)], ['Comments', num(pub.comments)],
          ['Shares', num(pub.shares)], ['Engagement', num(pub.engagement)]].forEach(function (c) {
          var td = el('td', null, c[1]);
          td.setAttribute('data-label', c[0]);
          tr.appendChild(td);
        });
        if (pub.reason) {
          var why = el('td', 'muted', pub.reason);
          why.setAttribute('data-label', 'Note');
          tr.appendChild(why);
        }
        statsBody.appendChild(tr);
      });
      var words = 'Read live ' + fmtTime(data.fetched_at) + '; a dash: the network does not report that counter, or the publication was not read.';
      if (data.partial) { words += ' Partial: some publications could not be read this time; reload to try again.'; }
      if ((data.accounts_needing_reconnect || []).length) { words += ' Some accounts must be connected again (Accounts) before their counters can be read.'; }
      statsNote.textContent = words;
    }).catch(function (err) {
      statsBody.textContent = '';
      statsNote.textContent = 'The analytics could not be read: ' + err.message;
    }).finally(function () { postStats.removeAttribute('aria-busy'); });
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

  // The options as people read them; an option not named here is shown by its key.
  var optionLabels = {
    privacy_level: 'Who can watch', allow_comment: 'Allow comments', allow_duet: 'Allow duets', allow_stitch: 'Allow stitches',
    brand_organic: 'Promotional content (your own brand)', branded_content: 'Paid partnership (branded content)',
    is_ai_generated: 'AI-generated content', title: 'Title', privacy_status: 'Privacy', made_for_kids: 'Made for kids',
    category_id: 'Category', playlist_id: 'Playlist', tags: 'Tags (comma-separated)', notify_subscribers: 'Notify subscribers',
    board_id: 'Board', link: 'Link', type: 'Type', share_to_feed: 'Also show the reel in the feed',
    collaborators: 'Collaborators (comma-separated usernames)', visibility: 'Visibility', reply_settings: 'Who can reply',
    poll: 'Poll', langs: 'Languages (comma-separated tags)', labels: 'Content labels', reply_control: 'Who can reply',
    topic_tag: 'Topic', link_card: 'Link card'
  };
  var enumLabels = { PUBLIC_TO_EVERYONE: 'Everyone', MUTUAL_FOLLOW_FRIENDS: 'Friends (followers you follow back)',
    FOLLOWER_OF_CREATOR: 'Followers', SELF_ONLY: 'Only me' };
  // optionOrder puts a network's options in the order its own app asks them; the schema's other
  // options follow in its order.
  var optionOrder = {
    tiktok: ['privacy_level', 'allow_comment', 'allow_duet', 'allow_stitch', 'brand_organic', 'branded_content', 'is_ai_generated'],
    youtube: ['title', 'privacy_status', 'made_for_kids', 'category_id', 'playlist_id', 'tags', 'notify_subscribers'],
    pinterest: ['board_id', 'title', 'link'],
    instagram: ['type', 'collaborators', 'share_to_feed'],
    twitter_x: ['reply_settings', 'poll']
  };

  function fieldLabel(field) {
    var m;
    if (!field) { return ''; }
    if (field === 'content') { return 'Text'; }
    if ((m = /^options\.([a-z_]+)/.exec(field))) { return optionLabels[m[1]] || m[1].replace(/_/g, ' '); }
    if ((m = /^media\[(\d+)\]\.alt_text$/.exec(field))) { return 'Alt text of media ' + (Number(m[1]) + 1); }
    if ((m = /^media\[(\d+)\]/.exec(field))) { return 'Media ' + (Number(m[1]) + 1); }
    return field.replace(/_/g, ' ');
  }

  // labelled is a check's error or warning as a line: its field's name, then its message (the
  // name left out when the message starts with it).
  function labelled(e) {
    // A text over its network's limit is said as a person counts it (humanError).
    if (/^text is \d+ [^;]*; .+? allows \d+/.test(e.message || '')) { return humanError(e.field, e.message, null); }
    var label = fieldLabel(e.field);
    if (!label || String(e.message).toLowerCase().indexOf(label.toLowerCase()) === 0) { return e.message; }
    return label + ': ' + e.message;
  }
  var units = { x: 'characters as X counts them', utf16: 'characters', graphemes: 'characters', code_points: 'characters' };

  // ---- a refusal worded for people, beside the field it concerns ----
  // The API's check is the one check (http/api, check.go): the pages only word what it answered
  // and place each error beside the field it names (the message's "field: reason", or a
  // target's errors in details.targets): the field gets aria-invalid and a .field-error its
  // aria-describedby names; each goes when one of its fields changes, and all of them when the
  // submission succeeds.
  function sentence(s) {
    s = String(s || '').trim();
    if (!s) { return s; }
    s = s.charAt(0).toUpperCase() + s.slice(1);
    return /[.!?)]$/.test(s) ? s : s + '.';
  }
  // humanError words one error: a target's ({field, message}, of platform), or a post's field.
  function humanError(field, msg, platform) {
    var m;
    msg = String(msg || '');
    if ((m = /^text is (\d+) [^;]*; (.+?) allows (\d+)/.exec(msg))) {
      var used = Number(m[1]), max = Number(m[3]);
      return m[2] + ' allows ' + max + ' characters; this text has ' + used + ' (' + (used - max) + ' too many).';
    }
    if (field === 'content' && /must not be empty/.test(msg)) { return 'Write some text, or add a photo or a video.'; }
    if (field === 'platforms' && /at least one/.test(msg)) { return 'Choose at least one account to publish to.'; }
    if (field === 'media' && /not a confirmed media/.test(msg)) { return 'A file is not uploaded yet, or was removed: upload it again.'; }
    if (field === 'scheduledAt' && /in the past/.test(msg)) { return 'This time has passed: choose a later one.'; }
    if (field === 'scheduledAt' && (m = /not an ISO 8601 date-time(?:: ([^(]*))?/.exec(msg))) {
      return 'Choose a date and a time' + (m[1] ? ' (' + m[1].trim() + ')' : '') + '.';
    }
    if (field === 'timezone') { return 'Choose a time zone from the list.'; }
    var net = platform ? networkName(platform) : '';
    var words = sentence(msg);
    return net && words.indexOf(net) < 0 ? net + ': ' + words : words;
  }
  var fieldErrors = [];
  // showFieldError writes text beside field (or the first of fields) and marks each invalid; a
  // change to any of clearOn (default: fields) clears it.
  function showFieldError(fields, text, clearOn) {
    fields = [].concat(fields).filter(Boolean);
    if (!fields.length) { return false; }
    var first = fields[0];
    var host = first.closest('fieldset, p, .opt') || first.parentNode;
    var id = (first.id || first.name || 'field') + '-error';
    var box = document.getElementById(id);
    if (!box) {
      box = el('span', 'field-error');
      box.id = id;
      host.appendChild(box);
    }
    box.textContent = box.textContent ? box.textContent + ' ' + text : text;
    box.hidden = false;
    fields.forEach(function (f) {
      f.setAttribute('aria-invalid', 'true');
      var ids = (f.getAttribute('aria-describedby') || '').split(/\s+/).filter(Boolean);
      if (ids.indexOf(id) < 0) { ids.push(id); f.setAttribute('aria-describedby', ids.join(' ')); }
    });
    fieldErrors.push({ box: box, id: id, fields: fields, clearOn: [].concat(clearOn || fields) });
    return true;
  }
  function dropFieldError(fe) {
    fe.box.textContent = '';
    fe.box.hidden = true;
    fe.fields.forEach(function (f) {
      f.removeAttribute('aria-invalid');
      var ids = (f.getAttribute('aria-describedby') || '').split(/\s+/).filter(function (x) { return x && x !== fe.id; });
      if (ids.length) { f.setAttribute('aria-describedby', ids.join(' ')); } else { f.removeAttribute('aria-describedby'); }
    });
  }
  var refusalShown = false;
  // clearFieldErrors clears the errors a change of field ends (every one when field is null);
  // once none is left, the refusal's message at the top goes too.
  function clearFieldErrors(field) {
    var left = [];
    fieldErrors.forEach(function (fe) {
      if (!field || fe.clearOn.indexOf(field) >= 0) { dropFieldError(fe); } else { left.push(fe); }
    });
    fieldErrors = left;
    if (!left.length && refusalShown && flashBox) { flashBox.hidden = true; refusalShown = false; }
  }
  document.addEventListener('input', function (ev) { if (fieldErrors.length) { clearFieldErrors(ev.target); } });
  document.addEventListener('change', function (ev) { if (fieldErrors.length) { clearFieldErrors(ev.target); } });
  // placeRefusal words a refusal and places each error with place(field, target check) → the
  // fields it concerns (or null: not on this form). When one is placed, the page's message says
  // what is wrong in the same words, or how many problems are shown beside their fields, and
  // goes once they are all cleared. It answers how many were placed and the words.
  function placeRefusal(err, place, verb) {
    clearFieldErrors(null);
    var said = [], placed = 0;
    var list = (err.details && err.details.targets) || [];
    list.forEach(function (tc) {
      (tc.errors || []).forEach(function (e) {
        var words = humanError(e.field, e.message, tc.platform);
        if (/^options\./.test(e.field || '')) { said.push(words); return; } // beside the option (showResult)
        var at = place(e.field, tc);
        if (at && showFieldError(at.fields, words, at.clearOn)) { placed++; }
        said.push(words);
      });
    });
    var m = /^([A-Za-z_][A-Za-z0-9_]*)(?:\[\d+\])?(?:\.[a-z_]+)?: (.*)$/.exec(err.message || '');
    if (!list.length && m) {
      var words = humanError(m[1], m[2], null);
      var at = place(m[1], null);
      if (at && showFieldError(at.fields, words, at.clearOn)) { placed++; }
      said.push(words);
    }
    var words = !said.length ? err.message : (verb ? verb + ': ' : '') +
      (said.length === 1 || !placed ? said.join(' ') : said.length + ' problems, each shown beside what it concerns.');
    if (placed) {
      flash(words);
      refusalShown = true;
    }
    return { placed: placed, words: words };
  }

  // hint is an option's schema description as a user reads it: without its references to the API.
  function hint(desc) {
    return String(desc || '').replace(/\s*\(capabilities:[^)]*\)/g, '').replace(/\s*Required\.$/, '');
  }

  // hints replace the descriptions written for developers where a user needs other words.
  var hints = { 'tiktok.privacy_level': 'TikTok asks you to choose who can watch; nothing is chosen for you.' };

  // choiceList is what an option may be, [{value, name}], from the account's live choices when
  // the network gave them, else from the schema's enumeration; null for a free field.
  function choiceList(platform, key, prop, ch) {
    var live = null;
    if (platform === 'tiktok' && key === 'privacy_level' && ch.privacy_level_options && ch.privacy_level_options.length) {
      live = ch.privacy_level_options.map(function (v) { return { value: v, name: enumLabels[v] || v }; });
    }
    var lists = { category_id: ch.categories, playlist_id: ch.playlists, board_id: ch.boards };
    if (lists[key] && lists[key].length) {
      live = lists[key].map(function (c) { return { value: c.id, name: c.name || c.id }; });
    }
    if (live) { return live; }
    if (prop.type === 'string' && prop.enum) {
      return prop.enum.map(function (v) { return { value: v, name: enumLabels[v] || v }; });
    }
    return null;
  }

  // optionField draws one option of a network's schema: a select for a choice, a checkbox for a
  // boolean (sent only when changed from its default, so untouched means the network's own
  // default), a text field for a string or a comma-separated list, checkboxes for a list of an
  // enumeration, and the X poll. Every value is written with textContent or .value.
  function optionField(platform, key, prop, caps, idp, required) {
    var ch = caps.choices || {};
    var wrap = el('div', 'opt');
    wrap.setAttribute('data-field', key);
    var id = idp + key;
    var name = optionLabels[key] || key.replace(/_/g, ' ');
    var choices = choiceList(platform, key, prop, ch);
    var f;
    if (prop.type === 'boolean') {
      var lab = el('label', 'check');
      f = el('input');
      f.type = 'checkbox';
      f.id = id;
      f.setAttribute('data-kind', 'bool');
      var on = /default true/i.test(prop.description || '');
      f.checked = on;
      f.defaultChecked = on;
      lab.appendChild(f);
      lab.appendChild(document.createTextNode(' ' + name));
      wrap.appendChild(lab);
    } else if (choices) {
      var l = el('label', null, name + (required ? ' (required)' : ''));
      l.htmlFor = id;
      wrap.appendChild(l);
      f = el('select');
      f.id = id;
      f.setAttribute('data-kind', 'enum');
      var none = el('option', null, required ? 'Choose…' : 'Network default');
      none.value = '';
      f.appendChild(none);
      choices.forEach(function (c) {
        var o = el('option', null, c.name);
        o.value = c.value;
        f.appendChild(o);
      });
      f.value = ''; // never a choice the user did not make
      wrap.appendChild(f);
    } else if (prop.type === 'array' && prop.items && prop.items.enum) {
      var fs = el('fieldset', 'opt-group');
      fs.appendChild(el('legend', null, name));
      prop.items.enum.forEach(function (v) {
        var lb = el('label', 'check');
        var cb = el('input');
        cb.type = 'checkbox';
        cb.value = v;
        cb.setAttribute('data-opt', key);
        cb.setAttribute('data-kind', 'label');
        lb.appendChild(cb);
        lb.appendChild(document.createTextNode(' ' + v));
        fs.appendChild(lb);
      });
      wrap.appendChild(fs);
    } else if (prop.type === 'object' && key === 'poll') {
      var det = el('details', 'opt-poll-box');
      det.appendChild(el('summary', null, 'Add a poll'));
      var pfs = el('fieldset', 'opt-group opt-poll');
      pfs.appendChild(el('legend', null, 'Poll: two to four choices (no media with a poll)'));
      for (var i = 0; i < 4; i++) {
        var pi = el('input');
        pi.type = 'text';
        pi.maxLength = 25;
        pi.setAttribute('data-poll-option', '');
        pi.setAttribute('aria-label', 'Poll choice ' + (i + 1));
        pi.placeholder = 'Choice ' + (i + 1);
        pfs.appendChild(pi);
      }
      var dl = el('label', null, 'Duration in minutes');
      dl.htmlFor = id + '-duration';
      var dur = el('input');
      dur.type = 'number';
      dur.id = id + '-duration';
      dur.min = 5;
      dur.max = 10080;
      dur.value = 1440;
      dur.setAttribute('data-poll-duration', '');
      pfs.appendChild(dl);
      pfs.appendChild(dur);
      det.appendChild(pfs);
      wrap.appendChild(det);
    } else if (prop.type === 'array' || prop.type === 'string') {
      var tl = el('label', null, name + (required ? ' (required)' : ''));
      tl.htmlFor = id;
      wrap.appendChild(tl);
      f = el('input');
      f.type = prop.format === 'uri' ? 'url' : 'text';
      f.id = id;
      if (prop.maxLength) { f.maxLength = prop.maxLength; }
      f.setAttribute('data-kind', prop.type === 'array' ? 'list' : 'string');
      wrap.appendChild(f);
    } else {
      return null;
    }
    if (f) { f.setAttribute('data-opt', key); }
    if (prop.description && prop.type !== 'boolean' && !(prop.type === 'object' && key === 'poll')) {
      wrap.appendChild(el('p', 'hint muted', hints[platform + '.' + key] || hint(prop.description)));
    }
    var err = el('p', 'opt-error target-error');
    err.hidden = true;
    wrap.appendChild(err);
    return wrap;
  }

  // renderOptions draws an account's options form from its capabilities.
  function renderOptions(box, platform, caps, idp) {
    box.textContent = '';
    box.removeAttribute('aria-busy');
    var schema = caps.options_schema || {};
    var props = schema.properties || {};
    var required = caps.required_options || [];
    var ch = caps.choices || {};
    var keys = (optionOrder[platform] || []).filter(function (k) { return props[k]; });
    Object.keys(props).forEach(function (k) { if (keys.indexOf(k) < 0) { keys.push(k); } });
    if (platform === 'tiktok' && ch.nickname) {
      var who = el('p', 'creator', 'Posting as ');
      who.appendChild(el('strong', null, ch.nickname));
      box.appendChild(who);
    }
    var defs = caps.default_options;
    if (defs && typeof defs === 'object' && Object.keys(defs).length) {
      box.appendChild(el('p', 'hint muted', 'The account\'s defaults apply where you leave a choice empty: ' +
        Object.keys(defs).map(function (k) { return (optionLabels[k] || k) + ' ' + JSON.stringify(defs[k]); }).join(', ') + '.'));
    }
    if (!keys.length) { box.appendChild(el('p', 'muted', networkName(platform) + ' takes no options.')); return; }
    keys.forEach(function (k) {
      if (platform === 'tiktok' && k === 'brand_organic') {
        box.appendChild(el('h4', null, 'Disclose commercial content'));
      }
      var f = optionField(platform, k, props[k], caps, idp, required.indexOf(k) >= 0);
      if (f) { box.appendChild(f); }
    });
    if (platform === 'tiktok') { tiktokRules(box, ch); }
  }

  // tiktokRules applies TikTok's content-sharing guidelines to its form: the interactions the
  // creator has turned off cannot be turned on, and branded content cannot be private.
  function tiktokRules(box, ch) {
    [['allow_comment', ch.comment_disabled], ['allow_duet', ch.duet_disabled], ['allow_stitch', ch.stitch_disabled]].forEach(function (x) {
      var f = box.querySelector('[data-opt="' + x[0] + '"]');
      if (f && x[1]) {
        f.checked = false;
        f.disabled = true;
        f.closest('.opt').appendChild(el('p', 'hint muted', 'Off in the creator\'s TikTok settings.'));
      }
    });
    var privacy = box.querySelector('[data-opt="privacy_level"]');
    var branded = box.querySelector('[data-opt="branded_content"]');
    if (!privacy || !branded) { return; }
    var note = el('p', 'hint muted', 'Branded content cannot be private (Only me).');
    note.hidden = true;
    branded.closest('.opt').appendChild(note);
    var selfOnly = privacy.querySelector('option[value="SELF_ONLY"]');
    function apply() {
      var private_ = privacy.value === 'SELF_ONLY';
      if (private_) { branded.checked = false; }
      branded.disabled = private_;
      note.hidden = !private_;
      if (selfOnly) { selfOnly.disabled = branded.checked; }
    }
    privacy.addEventListener('change', apply);
    branded.addEventListener('change', apply);
    apply();
  }

  // readOptions is a form's options as a target's options object: what the user set only.
  function readOptions(box) {
    var o = {};
    box.querySelectorAll('[data-opt]').forEach(function (f) {
      var k = f.getAttribute('data-opt'), kind = f.getAttribute('data-kind');
      if (kind === 'bool') {
        if (!f.disabled && f.checked !== f.defaultChecked) { o[k] = f.checked; }
        return;
      }
      if (kind === 'label') {
        if (f.checked) { (o[k] = o[k] || []).push(f.value); }
        return;
      }
      var v = f.value.trim();
      if (v === '') { return; }
      if (kind === 'list') {
        var items = v.split(',').map(function (s) { return s.trim(); }).filter(Boolean);
        if (items.length) { o[k] = items; }
        return;
      }
      o[k] = v;
    });
    var poll = box.querySelector('.opt-poll');
    if (poll) {
      var choices = Array.prototype.map.call(poll.querySelectorAll('[data-poll-option]'), function (f) { return f.value.trim(); })
        .filter(Boolean);
      if (choices.length) {
        o.poll = { options: choices, duration_minutes: Number(poll.querySelector('[data-poll-duration]').value) || 0 };
      }
    }
    return o;
  }

  function setupCompose(form) {
    var text = form.querySelector('#content');
    var counts = document.getElementById('counts');
    var boxes = form.querySelectorAll('input[name="platforms"]');
    var submit = document.getElementById('submit-post');
    var draft = document.getElementById('save-draft');
    var blockers = document.getElementById('blockers');
    var summary = document.getElementById('check-summary');
    var schedFields = document.getElementById('schedule-fields');
    var media = []; // {id, name}
    var uploading = 0;
    var caps = {}; // account id → capabilities, once read

    function selected() {
      return Array.prototype.filter.call(boxes, function (b) { return b.checked; });
    }
    function sectionOf(id) { return form.querySelector('.net-section[data-account="' + id + '"]'); }
    function later() { return form.querySelector('input[name="when"]:checked').value === 'later'; }
    // textOf is the text an account's network gets: its own when customised, else the shared one.
    function textOf(id) {
      var s = sectionOf(id);
      if (s && s.querySelector('.net-customise').checked) { return s.querySelector('.net-content').value; }
      return text.value;
    }
    function recount() {
      counts.textContent = '';
      selected().forEach(function (b) {
        var max = Number(b.getAttribute('data-limit'));
        var n = countText(textOf(b.value), b.getAttribute('data-count'));
        var li = el('li', n > max ? 'over' : '', b.getAttribute('data-network') + ': ' + n + ' / ' + max);
        li.setAttribute('data-platform', b.getAttribute('data-platform'));
        counts.appendChild(li);
      });
    }

    // ---- each account's section ----
    function loadOptions(s) {
      var id = s.getAttribute('data-account'), platform = s.getAttribute('data-platform');
      var box = s.querySelector('.net-options');
      var draw = function (c) { renderOptions(box, platform, c, 'opt-' + id + '-'); s.setAttribute('data-ready', 'true'); };
      if (caps[id]) { draw(caps[id]); return; }
      api('GET', '/api/accounts/' + encodeURIComponent(id) + '/capabilities').then(function (c) {
        caps[id] = c;
        draw(c);
        check();
      }).catch(function (err) {
        box.textContent = '';
        box.removeAttribute('aria-busy');
        box.appendChild(el('p', 'target-error', 'What ' + networkName(platform) + ' allows could not be read: ' + err.message));
        s.setAttribute('data-ready', 'true');
      });
    }
    function renderNetMedia(s) {
      var own = s.querySelector('.net-own-media');
      s.querySelector('.net-own-media-pick').hidden = media.length === 0;
      var ul = s.querySelector('.net-media');
      ul.hidden = !own.checked || media.length === 0;
      var off = {};
      ul.querySelectorAll('input').forEach(function (c) { if (!c.checked) { off[c.value] = true; } });
      ul.textContent = '';
      media.forEach(function (m) {
        var li = el('li');
        var lb = el('label', 'check');
        var cb = el('input');
        cb.type = 'checkbox';
        cb.value = m.id;
        cb.checked = !off[m.id];
        cb.setAttribute('data-skip', '');
        lb.appendChild(cb);
        lb.appendChild(document.createTextNode(' ' + m.name));
        li.appendChild(lb);
        ul.appendChild(li);
      });
    }
    function resetSection(s) {
      var c = s.querySelector('.net-customise');
      c.checked = false;
      s.querySelector('.net-text').hidden = true;
      s.querySelector('.net-content').value = '';
      s.querySelector('.net-own-media').checked = false;
      s.querySelector('.net-media').textContent = '';
      s.querySelectorAll('.net-thread, .net-comment').forEach(function (f) { f.value = ''; });
      renderNetMedia(s);
      showResult(s, null);
      var id = s.getAttribute('data-account');
      if (caps[id]) { renderOptions(s.querySelector('.net-options'), s.getAttribute('data-platform'), caps[id], 'opt-' + id + '-'); }
    }
    form.querySelectorAll('.net-section').forEach(function (s) {
      var custom = s.querySelector('.net-customise'), own = s.querySelector('.net-content');
      custom.addEventListener('change', function () {
        s.querySelector('.net-text').hidden = !custom.checked;
        // A network's own text starts from the shared text.
        if (custom.checked && own.value === '') { own.value = text.value; }
        if (custom.checked) { own.focus(); }
        recount();
      });
      own.addEventListener('input', recount);
      s.querySelector('.net-own-media').addEventListener('change', function () { renderNetMedia(s); });
    });
    boxes.forEach(function (b) {
      b.addEventListener('change', function () {
        var s = sectionOf(b.value);
        if (!s) { return; }
        s.hidden = !b.checked;
        if (b.checked && !s.hasAttribute('data-loading')) {
          s.setAttribute('data-loading', '');
          loadOptions(s);
        }
      });
    });

    // showResult writes a target's check (of POST /api/posts/validate, or of a refusal's
    // details.targets) beside its section: its errors (also under the option they name), its
    // warnings and what the network would receive. tc null clears it.
    function showResult(s, tc) {
      var box = s.querySelector('.net-result');
      var state = s.querySelector('.net-state');
      box.textContent = '';
      s.querySelectorAll('.opt-error').forEach(function (p) { p.hidden = true; p.textContent = ''; });
      s.querySelectorAll('.opt.invalid').forEach(function (p) { p.classList.remove('invalid'); });
      if (!tc) { state.textContent = ''; state.className = 'badge net-state'; s.removeAttribute('data-valid'); return; }
      var errs = tc.errors || [], warns = tc.warnings || [];
      s.setAttribute('data-valid', tc.valid ? 'true' : 'false');
      state.textContent = tc.valid ? 'ready' : (errs.length === 1 ? '1 problem' : errs.length + ' problems');
      state.className = 'badge net-state ' + (tc.valid ? 'badge-ok' : 'badge-failed');
      if (errs.length) {
        var ul = el('ul', 'net-errors');
        errs.forEach(function (e) {
          ul.appendChild(el('li', 'target-error', labelled(e)));
          var m = /^options\.([a-z_]+)/.exec(e.field || '');
          var opt = m && s.querySelector('.opt[data-field="' + m[1] + '"]');
          if (opt) {
            opt.classList.add('invalid');
            var p = opt.querySelector('.opt-error');
            p.textContent = e.message;
            p.hidden = false;
          }
        });
        box.appendChild(ul);
      }
      if (warns.length) {
        var wl = el('ul', 'net-warnings');
        warns.forEach(function (w) {
          wl.appendChild(el('li', 'warn', labelled(w)));
        });
        box.appendChild(wl);
      }
      var pv = tc.preview;
      if (pv) {
        var fig = el('figure', 'preview');
        var cap = el('figcaption', 'muted', 'What ' + networkName(tc.platform) + ' gets');
        fig.appendChild(cap);
        if (pv.length) {
          var len = el('p', 'preview-length' + (pv.length.used > pv.length.max ? ' over' : ''),
            pv.length.used + ' / ' + pv.length.max + ' ' + (units[pv.length.unit] || String(pv.length.unit || '').replace(/_/g, ' ')));
          fig.appendChild(len);
        }
        fig.appendChild(el('blockquote', 'preview-text', pv.content || ''));
        (pv.media || []).forEach(function (m, i) {
          var line = 'Media ' + (i + 1) + ': ' + m.content_type + (m.converted_to ? ' → ' + m.converted_to : '');
          if (m.alt_text) { line += ', alt text “' + m.alt_text + '”'; }
          fig.appendChild(el('p', 'preview-media muted', line));
        });
        if (pv.link_card) {
          // The card as read from the page; its image is not loaded here (an address the post
          // names is read by the server's egress rules, never by the dashboard's browser).
          var card = el('div', 'preview-card');
          card.appendChild(el('p', 'preview-card-title', pv.link_card.title || pv.link_card.url));
          if (pv.link_card.description) { card.appendChild(el('p', 'preview-card-text muted', pv.link_card.description)); }
          card.appendChild(el('p', 'preview-card-url muted', pv.link_card.url + (pv.link_card.image_url ? ' · with an image' : '')));
          fig.appendChild(card);
        }
        box.appendChild(fig);
      }
    }

    // ---- the body every door takes ----
    function buildBody(withTime) {
      var ids = selected().map(function (b) { return b.value; });
      var body = { content: text.value, platforms: ids, media: media.map(function (m) { return m.id; }) };
      var targets = [];
      ids.forEach(function (id) {
        var s = sectionOf(id);
        if (!s) { return; }
        var t = { account_id: id };
        if (s.querySelector('.net-customise').checked) { t.content = s.querySelector('.net-content').value; }
        if (s.querySelector('.net-own-media').checked && media.length) {
          t.media = Array.prototype.filter.call(s.querySelectorAll('.net-media input'), function (c) { return c.checked; })
            .map(function (c) { return c.value; });
        }
        if (caps[id]) {
          var o = readOptions(s.querySelector('.net-options'));
          if (Object.keys(o).length) { t.options = o; }
        }
        var th = s.querySelector('.net-thread');
        if (th && th.value.trim()) {
          t.thread = th.value.split(/\r?\n---[ \t]*(?:\r?\n|$)/).map(function (p) { return p.trim(); })
            .filter(function (p) { return p; }).map(function (p) { return { content: p }; });
        }
        var fc = s.querySelector('.net-comment');
        if (fc && fc.value.trim()) { t.first_comment = { content: fc.value }; }
        if (Object.keys(t).length > 1) { targets.push(t); }
      });
      if (targets.length) { body.targets = targets; }
      if (withTime && later()) {
        var d = document.getElementById('sched-date').value, tm = document.getElementById('sched-time').value;
        if (d && tm) {
          body.scheduledAt = d + 'T' + tm + ':00';
          body.timezone = document.getElementById('sched-zone').value;
        }
      }
      return body;
    }

    // ---- the live check: each change, 400 ms later, POST /api/posts/validate ----
    var checkSeq = 0, checkTimer = null;
    function soon() {
      clearTimeout(checkTimer);
      checkSeq++; // an answer to an older body is dropped
      form.setAttribute('data-checking', 'true');
      summary.classList.add('stale');
      checkTimer = setTimeout(check, 400);
    }
    function setBlockers(msgs) {
      blockers.textContent = '';
      blockers.className = 'blockers';
      submit.removeAttribute('data-blocked');
      if (!msgs) { return; }
      if (!msgs.length) {
        blockers.textContent = 'Ready.';
        blockers.className = 'blockers ok';
        return;
      }
      submit.setAttribute('data-blocked', 'true');
      blockers.className = 'blockers blocked';
      blockers.textContent = (later() ? 'Scheduling' : 'Publishing') + ' is blocked: ' + msgs.slice(0, 3).join('; ') +
        (msgs.length > 3 ? ' (and ' + (msgs.length - 3) + ' more)' : '') + '.';
    }
    function check() {
      clearTimeout(checkTimer);
      var mine = ++checkSeq;
      var ids = selected().map(function (b) { return b.value; });
      if (!ids.length) {
        summary.hidden = true;
        setBlockers(null);
        form.removeAttribute('data-checking');
        return;
      }
      form.setAttribute('data-checking', 'true');
      api('POST', '/api/posts/validate', buildBody(true)).then(function (v) {
        if (mine !== checkSeq) { return; }
        var byId = {};
        (v.targets || []).forEach(function (tc) { byId[tc.account_id] = tc; });
        var msgs = [];
        (v.errors || []).forEach(function (e) { msgs.push(labelled(e)); });
        ids.forEach(function (id) {
          var s = sectionOf(id), tc = byId[id];
          if (s) { showResult(s, tc || null); }
          if (tc && !tc.valid) {
            msgs.push(networkName(tc.platform) + ': ' + (tc.errors || []).map(labelled).join(', '));
          }
        });
        summary.textContent = '';
        summary.hidden = false;
        summary.classList.remove('stale');
        var bad = (v.targets || []).filter(function (tc) { return !tc.valid; }).length;
        summary.className = 'check-summary ' + (v.valid ? 'ok' : 'bad');
        summary.appendChild(el('strong', null, v.valid ? 'Ready for ' + ids.length + (ids.length === 1 ? ' network.' : ' networks.') :
          (bad ? bad + ' of ' + ids.length + ' networks need attention.' : 'The post needs attention.')));
        if ((v.errors || []).length) {
          var ul = el('ul');
          v.errors.forEach(function (e) { ul.appendChild(el('li', 'target-error', labelled(e))); });
          summary.appendChild(ul);
        }
        form.setAttribute('data-valid', v.valid ? 'true' : 'false');
        setBlockers(msgs);
      }).catch(function (err) {
        if (mine !== checkSeq) { return; }
        summary.hidden = false;
        summary.className = 'check-summary bad';
        summary.textContent = 'The post could not be checked: ' + err.message;
        setBlockers(null);
      }).finally(function () {
        if (mine === checkSeq) { form.removeAttribute('data-checking'); }
      });
    }
    var idemKey = null;
    form.addEventListener('input', function () { idemKey = null; });
    form.addEventListener('change', function () { idemKey = null; });
    form.addEventListener('input', function (ev) { if (ev.target.type !== 'file') { soon(); } });
    form.addEventListener('change', function (ev) { if (ev.target.type !== 'file') { soon(); } });

    text.addEventListener('input', recount);
    boxes.forEach(function (b) { b.addEventListener('change', recount); });

    // Autosave: the text, the accounts and the time are kept in this browser (per person and
    // workspace) as they are written, restored when Compose opens again, and forgotten once the
    // post is published, scheduled or saved as a draft; so a session that ends loses nothing.
    var saveKey = form.getAttribute('data-autosave');
    function autosave() {
      if (!saveKey) { return; }
      var st = { content: text.value, platforms: selected().map(function (b) { return b.value; }), when: later() ? 'later' : 'now',
        date: document.getElementById('sched-date').value, time: document.getElementById('sched-time').value,
        zone: document.getElementById('sched-zone').value };
      try {
        if (!st.content && !st.platforms.length) { localStorage.removeItem(saveKey); } else { localStorage.setItem(saveKey, JSON.stringify(st)); }
      } catch (e) { /* storage off */ }
    }
    function forget() { try { localStorage.removeItem(saveKey); } catch (e) { /* storage off */ } }
    form.addEventListener('input', autosave);
    form.addEventListener('change', autosave);
    (function restore() {
      var st = null;
      try { st = JSON.parse(localStorage.getItem(saveKey) || 'null'); } catch (e) { st = null; }
      if (!st || (!st.content && !(st.platforms || []).length)) { return; }
      text.value = st.content || '';
      boxes.forEach(function (b) {
        if (!b.disabled && (st.platforms || []).indexOf(b.value) >= 0 && !b.checked) {
          b.checked = true;
          b.dispatchEvent(new Event('change', { bubbles: true }));
        }
      });
      if (st.when === 'later') {
        var r = form.querySelector('input[name="when"][value="later"]');
        r.checked = true;
        r.dispatchEvent(new Event('change', { bubbles: true }));
        if (st.date) { document.getElementById('sched-date').value = st.date; }
        if (st.time) { document.getElementById('sched-time').value = st.time; }
        var z = document.getElementById('sched-zone');
        if (st.zone && Array.prototype.some.call(z.options, function (o) { return o.value === st.zone; })) { z.value = st.zone; }
      }
      recount();
      soon();
      form.setAttribute('data-restored', 'true');
      flash('What you were writing was restored.', 'ok');
    })();
    form.querySelectorAll('input[name="when"]').forEach(function (r) {
      r.addEventListener('change', function () {
        schedFields.hidden = !later();
        submit.textContent = later() ? 'Schedule' : 'Publish now';
      });
    });

    // Media: presign, PUT with progress, confirm; then its alt text.
    var list = document.getElementById('media-list');
    function mediaChanged() {
      clearFieldErrors(document.getElementById('media-file'));
      form.querySelectorAll('.net-section').forEach(renderNetMedia);
      soon();
    }
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
      // An image's thumbnail, read from the file itself (a data: URL: the policy allows no blob:).
      if (/^image\//.test(file.type) && window.FileReader) {
        var thumb = el('img', 'thumb');
        thumb.alt = '';
        var reader = new FileReader();
        reader.onload = function () { if (/^data:image\//.test(reader.result)) { thumb.src = reader.result; } };
        reader.readAsDataURL(file);
        li.appendChild(thumb);
      }
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
          mediaChanged();
        });
        li.appendChild(rm);
        li.appendChild(altField(m.id, file.name));
        mediaChanged();
      }).catch(function (err) {
        state.textContent = 'failed: ' + err.message;
        state.className = 'media-state target-error';
        bar.remove();
        // A failed upload is not part of the post: its row goes when the user has read it.
        var rm = el('button', 'secondary', 'Remove');
        rm.type = 'button';
        rm.setAttribute('aria-label', 'Remove the failed upload of ' + file.name);
        rm.addEventListener('click', function () { li.remove(); });
        li.setAttribute('data-failed', '');
        li.appendChild(rm);
      }).finally(function () { uploading--; });
    }
    // altField is a media's alt text, saved (PATCH /api/media/:id) when it changes; the networks
    // that take alt text send it with the media.
    function altField(id, name) {
      var p = el('p', 'media-alt');
      var l = el('label', null, 'Alt text');
      var f = el('textarea');
      f.rows = 2;
      f.id = 'alt-' + id;
      f.setAttribute('data-skip', '');
      f.setAttribute('aria-label', 'Alt text of ' + name);
      l.htmlFor = f.id;
      var st = el('span', 'muted alt-state');
      st.setAttribute('aria-live', 'polite');
      f.addEventListener('change', function () {
        st.textContent = 'saving…';
        api('PATCH', '/api/media/' + encodeURIComponent(id), { alt_text: f.value }).then(function () {
          st.textContent = 'saved';
          soon();
        }).catch(function (err) { st.textContent = ''; flash('The alt text was not saved: ' + err.message); });
      });
      p.appendChild(l); p.appendChild(f); p.appendChild(st);
      return p;
    }

    // composeField is where a refusal's error is shown on Compose: a target's text beside its own
    // text when it has one (else the shared text), its media, thread or first comment beside
    // those; the post's content, media, accounts, time and zone beside theirs.
    function composeField(field, tc) {
      var f = String(field || '').replace(/\[\d+\].*$/, ''), s = tc && sectionOf(tc.account_id);
      var when = [document.getElementById('sched-date'), document.getElementById('sched-time'), document.getElementById('sched-zone')];
      var picks = Array.prototype.slice.call(boxes);
      if (s && f === 'content' && s.querySelector('.net-customise').checked) { return { fields: [s.querySelector('.net-content')] }; }
      if (s && f === 'thread' && s.querySelector('.net-thread')) { return { fields: [s.querySelector('.net-thread')] }; }
      if (s && f === 'first_comment' && s.querySelector('.net-comment')) { return { fields: [s.querySelector('.net-comment')] }; }
      switch (f) {
        case 'content': return { fields: [text] };
        case 'media': return { fields: [document.getElementById('media-file')] };
        case 'platforms': case 'targets': return { fields: picks.filter(function (b) { return !b.disabled; }), clearOn: picks };
        case 'scheduledAt': return { fields: when.slice(0, 2), clearOn: when };
        case 'timezone': return { fields: [when[2]], clearOn: when };
      }
      return null;
    }

    // showRefusal writes a refusal's details.targets beside each network, and each error worded
    // for people beside the field it concerns; the form stays as it is.
    function showRefusal(err) {
      var worded = placeRefusal(err, composeField, 'Not ' + (later() ? 'scheduled' : 'published'));
      if (!worded.placed) { flash(worded.words); }
      var list = (err.details && err.details.targets) || [];
      list.forEach(function (tc) {
        var s = sectionOf(tc.account_id);
        if (s) { showResult(s, tc); }
      });
      if (list.length) {
        setBlockers(list.map(function (tc) {
          return networkName(tc.platform) + ': ' + (tc.errors || []).map(labelled).join(', ');
        }));
      }
      summary.textContent = '';
      summary.hidden = false;
      summary.className = 'check-summary bad';
      summary.appendChild(el('strong', null, flashBox && !flashBox.hidden ? flashBox.textContent : 'Not ' + (later() ? 'scheduled' : 'published') + ': ' + err.message));
      form.setAttribute('data-refused', 'true');
    }
    function busy(on) { submit.disabled = on; draft.disabled = on; }

    draft.addEventListener('click', function () {
      if (uploading) { flash('Wait for the uploads to finish.'); return; }
      busy(true);
      // A draft is kept as it is: its options need not be complete until it is published.
      api('POST', '/api/posts', buildBody(false)).then(function (post) {
        forget();
        location.assign('/posts/' + encodeURIComponent(post.id));
      }).catch(function (err) { showRefusal(err); busy(false); });
    });

    // Add to queue: the post is kept as a draft, then scheduled in the queue's first free slot
    // (POST /api/posts/:id/queue); a draft the queue refuses stays a draft, opened on its page
    // with the reason.
    var queueBtn = document.getElementById('add-queue');
    if (queueBtn) {
      queueBtn.addEventListener('click', function () {
        if (uploading) { flash('Wait for the uploads to finish.'); return; }
        busy(true);
        queueBtn.disabled = true;
        api('POST', '/api/posts', buildBody(false)).then(function (post) {
          var page = '/posts/' + encodeURIComponent(post.id);
          return api('POST', page.replace('/posts/', '/api/posts/') + '/queue').then(function () {
            try { sessionStorage.setItem('herald.flash', 'Added to the queue: scheduled in its first free slot.'); } catch (e) { /* storage off */ }
            location.assign(page);
          }, function (err) {
            try { sessionStorage.setItem('herald.flash', 'Saved as a draft, not added to the queue: ' + err.message); } catch (e) { /* storage off */ }
            location.assign(page);
          });
        }).catch(function (err) { showRefusal(err); busy(false); queueBtn.disabled = false; });
      });
    }

    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      if (uploading) { flash('Wait for the uploads to finish.'); return; }
      form.removeAttribute('data-refused');
      // A live check still pending or in flight describes the form before this submission: it
      // must not replace what the server answers to it.
      clearTimeout(checkTimer);
      checkSeq++;
      form.removeAttribute('data-checking');
      // The post's rules are the server's one check: the live check above shows them as the
      // post is written, and a refusal here (a change the check had not seen yet) is shown
      // beside each network the same way.
      var body = buildBody(false);
      busy(true);
      if (later()) {
        var d = document.getElementById('sched-date').value, t = document.getElementById('sched-time').value;
        if (!d || !t) { flash('Choose a date and a time.'); busy(false); return; }
        body.scheduledAt = d + 'T' + t + ':00';
        body.timezone = document.getElementById('sched-zone').value;
        api('POST', '/api/posts/schedule', body).then(function (post) {
          forget();
          location.assign('/posts/' + encodeURIComponent(post.id));
        }).catch(function (err) { showRefusal(err); busy(false); });
        return;
      }
      var chosen = selected();
      // One Idempotency-Key per submission: a click again after the answer was lost (the network
      // failed) sends the same key, and the server answers what it answered the first time
      // instead of publishing twice. Any answer, or any change to the form, ends the submission.
      if (!idemKey) { idemKey = newKey(); }
      api('POST', '/api/posts/publish', body, { 'Idempotency-Key': idemKey }).then(function (acc) {
        idemKey = null;
        forget();
        clearFieldErrors(null);
        if (flashBox && flashBox.classList.contains('error')) { flashBox.hidden = true; }
        // Held for approval (a workspace that requires it): no job to follow; the post's page
        // says it waits.
        if (acc && acc.status === 'pending_approval') {
          location.assign('/posts/' + encodeURIComponent(acc.id));
          return;
        }
        // Accepted: the form is cleared for the next post (the accounts stay chosen, each
        // network's options are asked again) and opens again once the job is done; the progress
        // below tells what became of this one.
        follow(acc, chosen, function () { busy(false); });
        text.value = '';
        media = [];
        list.textContent = '';
        form.querySelectorAll('.net-section').forEach(resetSection);
        clearTimeout(checkTimer);
        checkSeq++;
        summary.hidden = true;
        setBlockers(null);
        form.removeAttribute('data-checking');
        form.removeAttribute('data-valid');
        recount();
      }).catch(function (err) {
        if (err.status) { idemKey = null; }
        showRefusal(err);
        busy(false);
      });
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
          var u = publishedURL(pl);
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
  // ---- the calendar: move a scheduled post by dragging it or with the keyboard ----
  // Both ways end in moveTo, which asks POST /api/posts/:id/schedule (the same operation and
  // check as POST /v1/posts/:id/schedule) for the wall time in the user's zone: on a month's
  // day the post keeps its time of day; on a week's hour it keeps its minutes.
  var cal = document.getElementById('calendar');
  if (cal) { setupCalendar(cal); }

  function setupCalendar(cal) {
    var week = cal.getAttribute('data-view') === 'week';
    var live = document.getElementById('cal-live');
    var cells = Array.prototype.slice.call(cal.querySelectorAll('[data-drop]'));
    function say(msg) { if (live) { live.textContent = msg; } }
    function cellOf(li) { return li.closest('[data-drop]'); }

    // newTime is where a post (its clock HH:MM) lands in a cell.
    function newTime(li, cell) {
      var clock = li.getAttribute('data-clock');
      var hh = clock.slice(0, 2), mm = clock.slice(3, 5);
      if (week) { hh = ('0' + cell.getAttribute('data-hour')).slice(-2); }
      return { date: cell.getAttribute('data-date'), clock: hh + ':' + mm };
    }
    var moving = false;
    function moveTo(li, cell) {
      if (!cell || cell === cellOf(li) || moving) { return Promise.resolve(false); }
      var t = newTime(li, cell);
      moving = true;
      li.setAttribute('aria-busy', 'true');
      return api('POST', '/api/posts/' + encodeURIComponent(li.getAttribute('data-post')) + '/schedule',
        { scheduledAt: t.date + 'T' + t.clock + ':00', timezone: userZone }).then(function (post) {
        var where = cell.getAttribute('data-label').replace(/, \d\d:00$/, '') + ' at ' + t.clock;
        // In a workspace that requires approval the new time waits for it, as the API says.
        reloadWith(post && post.status === 'pending_approval' ? 'Moved to ' + where + ': it waits for approval.' : 'Moved to ' + where + '.');
        return true;
      }).catch(function (err) {
        moving = false;
        li.removeAttribute('aria-busy');
        flash('The post was not moved: ' + err.message);
        return false;
      });
    }

    // Dragging with a mouse or a pen (a finger scrolls the page: it moves a post with its Move
    // button, then a tap on the day). The post follows the pointer as a copy; the cell under it
    // is marked; letting go there moves it.
    var drag = null;
    cal.addEventListener('dragstart', function (ev) { if (ev.target.closest && ev.target.closest('.cal-post')) { ev.preventDefault(); } });
    cal.addEventListener('pointerdown', function (ev) {
      var li = ev.target.closest('li[data-movable]');
      if (!li || ev.button !== 0 || ev.pointerType === 'touch' || ev.target.closest('.cal-move')) { return; }
      drag = { li: li, x: ev.clientX, y: ev.clientY, ghost: null, over: null, id: ev.pointerId };
    });
    document.addEventListener('pointermove', function (ev) {
      if (!drag || ev.pointerId !== drag.id) { return; }
      if (!drag.ghost) {
        if (Math.abs(ev.clientX - drag.x) + Math.abs(ev.clientY - drag.y) < 6) { return; }
        drag.ghost = drag.li.cloneNode(true);
        drag.ghost.removeAttribute('data-movable');
        drag.ghost.className += ' cal-ghost';
        drag.ghost.setAttribute('aria-hidden', 'true');
        document.body.appendChild(drag.ghost);
        drag.li.classList.add('dragging');
        cal.classList.add('is-dragging');
      }
      ev.preventDefault();
      drag.ghost.style.left = (ev.clientX + 8) + 'px';
      drag.ghost.style.top = (ev.clientY + 8) + 'px';
      var under = document.elementFromPoint(ev.clientX, ev.clientY);
      var cell = under && under.closest('#calendar [data-drop]');
      if (cell !== drag.over) {
        if (drag.over) { drag.over.classList.remove('drop-target'); }
        drag.over = cell;
        if (cell) { cell.classList.add('drop-target'); }
      }
    });
    function endDrag(ev, drop) {
      if (!drag || ev.pointerId !== drag.id) { return; }
      var d = drag;
      drag = null;
      if (!d.ghost) { return; }
      d.ghost.remove();
      d.li.classList.remove('dragging');
      cal.classList.remove('is-dragging');
      if (d.over) { d.over.classList.remove('drop-target'); }
      // The click that follows a drag is not a click on the post's link.
      var swallow = function (e) { e.preventDefault(); e.stopPropagation(); };
      document.addEventListener('click', swallow, true);
      setTimeout(function () { document.removeEventListener('click', swallow, true); }, 0);
      if (drop && d.over) { moveTo(d.li, d.over); }
    }
    document.addEventListener('pointerup', function (ev) { endDrag(ev, true); });
    document.addEventListener('pointercancel', function (ev) { endDrag(ev, false); });

    // The keyboard's way: Move picks the post up; the arrow keys choose the day (up and down: a
    // week in the month, an hour in the week), Enter moves it there, Escape puts it back. A tap
    // or click on a day or hour while a post is picked up moves it there too.
    var held = null;
    function mark(cell) {
      if (held.target) { held.target.classList.remove('drop-target'); }
      held.target = cell;
      cell.classList.add('drop-target');
      cell.scrollIntoView({ block: 'nearest', inline: 'nearest' });
      var t = newTime(held.li, cell);
      say(cell === cellOf(held.li) ? 'Where it is now: ' + cell.getAttribute('data-label') + '.' :
        'To ' + cell.getAttribute('data-label').replace(/, \d\d:00$/, '') + ' at ' + t.clock + '. Enter to move it there.');
    }
    function release() {
      if (!held) { return; }
      if (held.target) { held.target.classList.remove('drop-target'); }
      held.li.classList.remove('picked');
      held.button.setAttribute('aria-pressed', 'false');
      held = null;
    }
    cal.addEventListener('click', function (ev) {
      var b = ev.target.closest('.cal-move');
      if (b) {
        ev.preventDefault();
        var li = b.closest('li[data-movable]');
        if (held && held.li === li) { release(); say('Not moved.'); return; }
        release();
        held = { li: li, button: b, target: null };
        li.classList.add('picked');
        b.setAttribute('aria-pressed', 'true');
        b.focus();
        mark(cellOf(li));
        return;
      }
      var cell = ev.target.closest('[data-drop]');
      if (!cell || ev.target.closest('a, button, summary, details, .cal-post')) { return; }
      if (held) {
        var h = held;
        release();
        moveTo(h.li, cell);
        return;
      }
      // A click on the empty part of a day or an hour writes a post for it.
      var to = cell.getAttribute('data-compose');
      if (to) { location.assign(to); }
    });
    document.addEventListener('keydown', function (ev) {
      if (!held) { return; }
      var i = cells.indexOf(held.target), step = 0;
      var perDay = week ? 24 : 1;
      // The week's cells are in day order, each day's hours in order; the month's by day.
      switch (ev.key) {
        case 'ArrowLeft': step = -perDay; break;
        case 'ArrowRight': step = perDay; break;
        case 'ArrowUp': step = week ? -1 : -7; break;
        case 'ArrowDown': step = week ? 1 : 7; break;
        case 'Escape':
          ev.preventDefault();
          release();
          say('Not moved.');
          return;
        case 'Enter': case ' ':
          ev.preventDefault();
          var h = held, target = held.target;
          release();
          moveTo(h.li, target).then(function (ok) { if (!ok) { h.button.focus(); } });
          return;
        default: return;
      }
      ev.preventDefault();
      var j = i + step;
      if (week && (step === 1 || step === -1) && Math.floor(j / 24) !== Math.floor(i / 24)) { return; }
      if (j >= 0 && j < cells.length) { mark(cells[j]); }
    });
  }

  // The posting queue's form (Settings): rows of a weekday and a time, added and removed here,
  // sent whole as PUT /api/queue; a refusal is shown beside the form.
  var queueForm = document.querySelector('form[data-queue]');
  if (queueForm) {
    var slotRows = queueForm.querySelector('[data-slots]');
    var slotTpl = document.getElementById('queue-slot-row');
    queueForm.addEventListener('click', function (ev) {
      if (ev.target.closest('[data-slot-add]')) {
        slotRows.appendChild(slotTpl.content.cloneNode(true));
        var added = slotRows.lastElementChild && slotRows.lastElementChild.querySelector('select');
        if (added) { added.focus(); }
        return;
      }
      var rm = ev.target.closest('[data-slot-remove]');
      if (rm) { rm.closest('li').remove(); }
    });
    queueForm.addEventListener('submit', function (ev) {
      ev.preventDefault();
      var box = queueForm.querySelector('[data-error]');
      box.hidden = true;
      box.textContent = '';
      var slots = Array.prototype.map.call(slotRows.querySelectorAll('li'), function (li) {
        return { weekday: li.querySelector('[data-slot-day]').value, time: li.querySelector('[data-slot-time]').value.slice(0, 5) };
      });
      queueForm.setAttribute('aria-busy', 'true');
      api('PUT', '/api/queue', { timezone: queueForm.querySelector('[name="timezone"]').value, slots: slots }).then(function () {
        reloadWith('Queue saved.');
      }).catch(function (err) {
        box.textContent = err.message;
        box.hidden = false;
      }).finally(function () { queueForm.removeAttribute('aria-busy'); });
    });
  }
})();
