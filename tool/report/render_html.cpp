// One self-contained HTML page for the triage desk: verdict and summary on top, then the run
// at a glance (a calls x slots map drawn on a canvas from data embedded in the page, cells
// coloured by what the reuse engine did, marked where a finding or a divergence lies), the
// per-key first-call vs later-call table, the divergence of each output over the calls, and
// every finding group with its fix. No network: styles, script and data are inline.
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/saturate.h"
#include "core/suggest.h"
#include "report/report.h"

namespace bod {

namespace {
using J = nlohmann::ordered_json;

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

// JSON inside <script>: "</" must not close the element.
std::string script_json(const J& j) {
  std::string s = j.dump();
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<')
      o += "\\u003c";
    else
      o += s[i];
  }
  return o;
}

// The map's cell codes: what the reuse engine did with a slot on a call.
//   W written   S skipped (static)   I skipped (intermediate)   P pooled (shared_nonstatic)
//   A aliased (shared_alias)   K kept, not written (other)   U no BO (unbound)   F call raised
char action(const TraceCall& c, const TraceSlot& s, bool ran) {
  if (c.failed) return 'F';
  if (s.place.pool == BoPool::unbound) return 'U';
  if (s.place.pool == BoPool::alias) return 'A';
  if (s.place.pool == BoPool::shared) return 'P';
  bool written =
      ran ? s.written : !(c.is_static(s.slot) && !c.first_of_key()) && !c.is_inter(s.slot);
  if (written) return 'W';
  if (c.is_static(s.slot)) return 'S';
  if (c.is_inter(s.slot)) return 'I';
  return 'K';
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// An SVG plot of one figure per output slot over the calls, on a log scale from 10^lo to 10^hi
// (a 1 - cosine of 0.0018 is as visible as one of 0.5), with the error threshold as a dashed
// line. `value` returns the figure of one compared output, or a negative number to leave it out.
std::string log_plot(const Trace& t, const std::string& id, const std::string& what, int lo, int hi,
                     double threshold, const std::string& threshold_label,
                     double (*value)(const OutputMetrics&)) {
  std::map<std::string, std::vector<std::pair<int, double>>> series;
  for (auto& c : t.calls)
    for (auto& o : c.outputs_cmp) {
      std::string name = c.kernel + "." +
                         (o.slot >= 0 && static_cast<size_t>(o.slot) < c.slots.size()
                              ? c.slots[static_cast<size_t>(o.slot)].name
                              : std::to_string(o.slot));
      double v = value(o);
      if (v >= 0) series[name].push_back({c.number, v});
    }
  if (series.empty()) return "<p>No per-call output comparison in this trace.</p>\n";
  const int W = 900, H = 160, L = 60, B = 20;
  double n = std::max<size_t>(t.calls.size(), 1);
  // Height of a value: 0 and anything below 10^lo at the axis, 10^hi and above (or non-finite)
  // at the top.
  auto y = [&](double v) {
    double e = !std::isfinite(v) ? hi : v <= 0 ? lo : std::log10(v);
    e = std::min<double>(hi, std::max<double>(lo, e));
    return H - (H - 4) * (e - lo) / (hi - lo);
  };
  std::ostringstream o;
  o << "<svg id=\"" << id << "\" class=\"plot\" data-scale=\"log\" data-lo=\"" << lo
    << "\" data-hi=\"" << hi << "\" width=\"" << W << "\" height=\"" << H + B
    << "\" role=\"img\" aria-label=\"" << esc(what) << " per output over calls, log scale\">\n"
    << "<line x1=\"" << L << "\" y1=\"" << H << "\" x2=\"" << W << "\" y2=\"" << H
    << "\" stroke=\"#888\"/><line x1=\"" << L << "\" y1=\"0\" x2=\"" << L << "\" y2=\"" << H
    << "\" stroke=\"#888\"/>\n";
  for (int e = lo; e <= hi; ++e) {
    double yy = y(std::pow(10.0, e));
    o << "<line x1=\"" << L - 4 << "\" y1=\"" << fmt("%.1f", yy) << "\" x2=\"" << W << "\" y2=\""
      << fmt("%.1f", yy) << "\" stroke=\"#eee\"/><text x=\"2\" y=\"" << fmt("%.1f", yy + 4)
      << "\" font-size=\"10\">" << (e == lo ? "&#8804;" : "") << "1e" << e << "</text>\n";
  }
  double ty = y(threshold);
  if (threshold > 0)
    o << "<line class=\"threshold\" data-value=\"" << fmt("%g", threshold) << "\" x1=\"" << L
      << "\" y1=\"" << fmt("%.1f", ty) << "\" x2=\"" << W << "\" y2=\"" << fmt("%.1f", ty)
      << "\" stroke=\"#c0392b\" stroke-dasharray=\"4 3\"/><text x=\"" << W - 150 << "\" y=\""
      << fmt("%.1f", ty - 3) << "\" font-size=\"10\" fill=\"#c0392b\">" << esc(threshold_label)
      << "</text>\n"
      << "<text x=\"" << W - 60 << "\" y=\"" << H + 14 << "\" font-size=\"10\">call "
      << t.calls.size() << "</text>\n";
  static const char* colours[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd",
                                  "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
  size_t i = 0;
  for (auto& [name, pts] : series) {
    const char* col = colours[i++ % 8];
    o << "<polyline class=\"series\" data-output=\"" << esc(name) << "\" fill=\"none\" stroke=\""
      << col << "\" stroke-width=\"1\" points=\"";
    for (auto& [call, v] : pts)
      o << fmt("%.1f", L + (W - L) * (call / n)) << "," << fmt("%.1f", y(v)) << " ";
    o << "\"><title>" << esc(name) << "</title></polyline>\n";
  }
  o << "</svg>\n<p class=\"legend\">";
  i = 0;
  for (auto& kv : series)
    o << "<span style=\"color:" << colours[i++ % 8] << "\">&#9632;</span> " << esc(kv.first) << " ";
  o << "</p>\n";
  return o.str();
}

// 1 - cosine of a compared output: new NaN/Inf count as a full divergence (1).
double one_minus_cos(const OutputMetrics& o) {
  if (o.nan_reuse || o.inf_reuse || !std::isfinite(o.cosine)) return 1.0;
  return std::max(0.0, 1 - o.cosine);
}
double max_rel(const OutputMetrics& o) {
  return std::isfinite(o.max_rel) ? o.max_rel : 1e3;
}

const char* kStyle = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:20px;color:#222}
h1{font-size:20px;margin:0 0 8px} h2{font-size:16px;margin:24px 0 8px}
.verdict{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff;font-weight:bold}
.pass{background:#2a7d2a}.fail{background:#c0392b}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
th{background:#f0f0f0}td.l{text-align:left}
.finding{border-left:4px solid #999;padding:4px 10px;margin:8px 0;background:#fafafa}
.finding.error{border-color:#c0392b}.finding.warning{border-color:#e67e22}.finding.note{border-color:#3498db}
.finding .ev{font-family:monospace;font-size:12px;color:#444;white-space:pre-wrap}
#mapwrap{position:relative;overflow:auto;max-height:80vh;border:1px solid #ccc;display:inline-block}
#tip{position:fixed;pointer-events:none;background:#333;color:#fff;padding:4px 8px;font-size:12px;border-radius:3px;display:none;white-space:pre}
.finding{cursor:pointer}.finding.sel{background:#fff3c4}
#filters{margin:4px 0;font-size:12px}#filters select{margin:0 10px 0 4px}
.key span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}
)";

const char* kScript = R"(
(function(){
var d=JSON.parse(document.getElementById('data').textContent);
var colours={W:'#4e79a7',S:'#59a14f',I:'#edc948',P:'#b07aa1',A:'#f28e2b',K:'#bab0ac',U:'#eeeeee',F:'#000000',' ':'#ffffff'};
var cols=d.cols,label=230;
var cw=Math.max(8,Math.min(24,Math.floor(900/Math.max(cols,1))));
var cv=document.getElementById('map'),g=cv.getContext('2d');
var fphase=document.getElementById('fphase'),flayer=document.getElementById('flayer'),zoom=document.getElementById('zoom');
var marks={},marked={};
d.marks.forEach(function(m){var k=m[0]+':'+m[1];if(!marks[k]||m[2]!=='diverged')marks[k]=m[2];if(m[2]!=='diverged')marked[m[0]]=1;});
cv.dataset.marked=Object.keys(marked).length;
// Filters: phase and layer (from the data), zoom (row height); also from the page's ?query.
function opts(sel,vals,name){vals.forEach(function(v){var o=document.createElement('option');o.value=String(v);o.textContent=name(v);sel.appendChild(o);});}
var ph=[],ly=[];
d.calls.forEach(function(c){if(ph.indexOf(c[1])<0)ph.push(c[1]);if(ly.indexOf(c[3])<0)ly.push(c[3]);});
ly.sort(function(a,b){return a-b;});
opts(fphase,ph,function(v){return v===''?'(no phase)':v;});
opts(flayer,ly,function(v){return v<0?'(no layer)':'l='+v;});
var q=new URLSearchParams(location.search);
if(q.has('phase'))fphase.value=q.get('phase');
if(q.has('layer'))flayer.value=q.get('layer');
if(q.has('zoom'))zoom.value=q.get('zoom');
var sel=null,vis=[],ch=2;
function shown(c){return (fphase.value==='*'||c[1]===fphase.value)&&(flayer.value==='*'||String(c[3])===flayer.value);}
function draw(){
  vis=d.calls.filter(shown);
  var rows=vis.length;
  ch=zoom.value==='auto'?Math.max(2,Math.min(12,Math.floor(30000/Math.max(rows,1)))):+zoom.value;
  cv.width=label+cols*cw+2;cv.height=Math.max(rows*ch,1);
  g.font=Math.min(ch,11)+'px monospace';g.textBaseline='top';
  var prev='',lit=0,first=-1;
  for(var r=0;r<rows;r++){
    var c=vis[r],y=r*ch,acts=c[6];
    var grp=c[1]+' t='+c[2];
    if(grp!==prev){g.fillStyle='#ddd';g.fillRect(0,y,cv.width,1);prev=grp;}
    if(sel&&sel[c[0]]){g.fillStyle='#ffe08a';g.fillRect(0,y,label,ch);lit++;if(first<0)first=y;}
    if(ch>=8){g.fillStyle='#333';g.fillText(c[0]+' '+c[1]+(c[2]>=0?' t='+c[2]:'')+(c[3]>=0?' l='+c[3]:'')+' '+c[4],2,y);}
    else if(c[7]){g.fillStyle='#c0392b';g.fillRect(label-6,y,4,ch);}
    for(var s=0;s<cols;s++){
      var a=s<acts.length?acts[s]:' ';
      g.fillStyle=colours[a]||'#fff';
      g.fillRect(label+s*cw,y,cw-1,Math.max(ch-1,1));
      var m=marks[c[0]+':'+s];
      if(m){g.strokeStyle=m==='error'?'#c0392b':m==='warning'?'#e67e22':m==='diverged'?'#000':'#3498db';
        g.lineWidth=2;g.strokeRect(label+s*cw+1,y+0.5,cw-3,Math.max(ch-2,1));}
    }
  }
  cv.dataset.rows=rows;cv.dataset.cols=cols;cv.dataset.rowpx=ch;cv.dataset.highlighted=lit;cv.dataset.drawn='1';
  if(first>=0)document.getElementById('mapwrap').scrollTop=Math.max(0,first-40);
}
// A finding group (a row of the findings list): every call it was seen on lit on the map.
function pick(el){
  document.querySelectorAll('.finding.sel').forEach(function(x){x.classList.remove('sel');});
  if(!el){sel=null;cv.dataset.group='';draw();return;}
  el.classList.add('sel');sel={};
  el.dataset.calls.split(' ').forEach(function(n){if(n)sel[n]=1;});
  cv.dataset.group=el.id;draw();
}
document.querySelectorAll('.finding').forEach(function(el){el.addEventListener('click',function(e){if(e.target.tagName==='A')return;pick(el.classList.contains('sel')?null:el);});});
[fphase,flayer,zoom].forEach(function(x){x.addEventListener('change',draw);});
function fromHash(){var el=location.hash.indexOf('#group-')===0?document.getElementById(location.hash.slice(1)):null;pick(el);}
window.addEventListener('hashchange',fromHash);
fromHash();
var tip=document.getElementById('tip');
var names={W:'written',S:'skipped (static)',I:'skipped (intermediate)',P:'pooled (shared_nonstatic)',A:'aliased (shared_alias)',K:'kept, not written',U:'no BO (unbound)',F:'the call raised'};
cv.addEventListener('mousemove',function(e){
  var b=cv.getBoundingClientRect(),x=e.clientX-b.left,y=e.clientY-b.top;
  var r=Math.floor(y/ch),s=Math.floor((x-label)/cw);
  if(r<0||r>=vis.length||s<0||s>=cols){tip.style.display='none';return;}
  var c=vis[r],a=c[6][s];if(!a){tip.style.display='none';return;}
  var k=d.kernels[c[4]]||[];
  tip.textContent='call '+c[0]+' '+c[1]+(c[2]>=0?' t='+c[2]:'')+(c[3]>=0?' l='+c[3]:'')+'\n'+c[4]+' slot '+s+' ('+(k[s]||'')+')\nbo_key '+c[5]+'\n'+(names[a]||a)+(marks[c[0]+':'+s]?'\n'+marks[c[0]+':'+s]:'');
  tip.style.left=(e.clientX+12)+'px';tip.style.top=(e.clientY+12)+'px';tip.style.display='block';
});
cv.addEventListener('mouseleave',function(){tip.style.display='none';});
})();
)";

}  // namespace

std::string render_html(const Report& r) {
  const FindingCounts& n = r.counts;
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>bo-doctor "
    << esc(r.command) << " " << esc(r.subject) << "</title>\n<style>" << kStyle
    << "</style></head>\n<body>\n";
  o << "<h1>bo-doctor " << esc(r.command) << ": "
    << esc(r.model_name.empty() ? r.subject : r.model_name)
    << "</h1>\n<p><span id=\"verdict\" class=\"verdict " << r.verdict() << "\">"
    << (r.fails() ? "FAIL" : "PASS") << "</span> <span id=\"counts\" data-errors=\"" << n.errors
    << "\" data-warnings=\"" << n.warnings << "\" data-notes=\"" << n.notes << "\">" << n.errors
    << " error(s), " << n.warnings << " warning(s), " << n.notes << " note(s) in "
    << r.groups.size() << " group(s), " << r.calls << " calls";
  o << "</span> &middot; " << esc(r.subject) << " &middot; fail-on " << fail_on_name(r.gate.fail_on)
    << "</p>\n";
  if (!r.stub_kernels.empty()) o << "<p id=\"stub-bodies\">Note: " << esc(stub_line(r)) << "</p>\n";
  if (r.ran && r.coverage.shadowed >= 0)
    o << "<p id=\"shadow-coverage\" data-shadowed=\"" << r.coverage.shadowed << "\" data-calls=\""
      << r.coverage.calls << "\">Shadow coverage: " << esc(r.coverage.shadow_note()) << "</p>\n";
  // First bad call, as in the text report.
  if (const Finding* first = r.first_error())
    o << "<p id=\"first-error\">First error: call " << first->call << " ("
      << esc(r.first_error_where) << "), " << esc(first->kernel)
      << (first->slot >= 0
              ? " slot " + std::to_string(first->slot) + " (" + esc(first->slot_name) + ")"
              : "")
      << " &mdash; " << esc(first->check) << "</p>\n";

  // The map's data: calls (number, phase, token, layer, kernel, bo_key, actions, diverged),
  // kernels' slot names, and marks (call, slot, what).
  J calls = J::array(), kernels = J::object(), marks = J::array();
  size_t cols = 0;
  if (r.trace) {
    for (auto& k : r.trace->header.kernels) {
      J names = J::array();
      for (auto& s : k.slots) names.push_back(s.name);
      kernels[k.name] = names;
    }
    for (auto& c : r.trace->calls) {
      std::string acts;
      for (auto& s : c.slots) {
        acts += action(c, s, r.engine_figures);
        if (s.diff_bytes) marks.push_back({c.number, s.slot, "diverged"});
      }
      cols = std::max(cols, c.slots.size());
      calls.push_back({c.number, c.phase, c.token, c.layer, c.kernel, key_label(c.ns, c.bo_key),
                       acts, c.diverged()});
    }
    // Every call a finding was seen on, not only its first and last.
    for (auto& f : r.findings) {
      if (!f.call || f.slot < 0) continue;
      std::vector<int> seen = f.calls.empty() ? std::vector<int>{f.call} : f.calls;
      for (int c : seen) marks.push_back({c, f.slot, severity_name(f.severity)});
    }
  }
  J data{{"calls", calls}, {"kernels", kernels}, {"marks", marks}, {"cols", cols}};

  o << "<h2>The run at a glance</h2>\n<p class=\"key\">Rows: calls in order (grouped by phase "
       "and token); columns: slots."
    << "<span style=\"background:#4e79a7\"></span>written<span style=\"background:#59a14f\"></span>"
       "skipped static<span style=\"background:#edc948\"></span>skipped intermediate"
       "<span style=\"background:#b07aa1\"></span>pooled<span style=\"background:#f28e2b\"></span>"
       "aliased<span style=\"background:#bab0ac\"></span>kept<span "
       "style=\"background:#000\"></span>"
       "raised; outlined: a finding (red error, orange warning, blue note) or black: bytes "
       "differ from no reuse</p>\n"
    << "<p id=\"filters\">Show phase<select id=\"fphase\"><option value=\"*\">all</option>"
       "</select>layer<select id=\"flayer\"><option value=\"*\">all</option></select>row "
       "height<select id=\"zoom\"><option value=\"auto\">auto</option><option>2</option>"
       "<option>4</option><option>8</option><option>12</option></select> Click a finding to "
       "light every call it was seen on.</p>\n"
    << "<div id=\"mapwrap\"><canvas id=\"map\" data-calls=\"" << calls.size()
    << "\"></canvas></div>\n"
    << "<div id=\"tip\"></div>\n";

  if (r.ran) {
    o << "<h2>bo_key: first call vs later calls</h2>\n<table "
         "id=\"keys\"><tr><th>bo_key</th><th>kernel</th>"
         "<th>first call</th><th>calls</th><th>first diverged</th><th>later diverged</th>"
         "<th>min cos (first)</th><th>min cos (later)</th><th>NaN/Inf (later)</th></tr>\n";
    for (auto& k : r.keys)
      o << "<tr><td class=\"l\">" << esc(key_label(k.ns, k.bo_key)) << "</td><td class=\"l\">"
        << esc(k.kernel) << "</td><td>" << k.first_call << "</td><td>" << k.calls << "</td><td>"
        << k.first_diverged << "</td><td>" << k.later_diverged << "</td><td>"
        << fmt("%.6f", k.first_min_cosine) << "</td><td>" << fmt("%.6f", k.later_min_cosine)
        << "</td><td>" << count_text(k.later_nan) << "</td></tr>\n";
    o << "</table>\n<h2>Divergence per output over calls (1 - cosine, reuse vs no reuse, log "
         "scale)</h2>\n"
      << log_plot(*r.trace, "divplot", "1 - cosine", -7, 0, 0.01, "cosine 0.99 (error below)",
                  one_minus_cos)
      << "<h2>Largest relative difference per output over calls (max_rel, log scale)</h2>\n"
      << log_plot(*r.trace, "relplot", "max_rel", -7, 3, -1, "", max_rel);
  }

  if (!r.xrt_reuse.empty()) {
    // The per-kernel reuse view of a recording at the XRT boundary (analysis/xrt_reuse.h).
    o << "<h2>Per-kernel BO reuse (recorded at the XRT boundary): first run vs later "
         "runs</h2>\n<table id=\"xrt-reuse\"><tr><th>kernel</th><th>runs</th><th>arg</th>"
         "<th>bytes</th><th>first run</th><th>later runs</th><th>role</th><th>advice</th></tr>\n";
    for (auto& k : r.xrt_reuse)
      for (auto& a : k.args) {
        if (!a.is_bo) continue;
        o << "<tr><td class=\"l\">" << esc((k.ns.empty() ? "" : k.ns + "/") + k.kernel)
          << "</td><td>" << k.runs << "</td><td class=\"l\">" << esc(a.name) << "</td><td>"
          << a.bytes << "</td><td>" << esc(xrt_first_run_text(a)) << "</td><td>"
          << esc(xrt_later_runs_text(a)) << "</td><td>" << esc(a.role) << "</td><td class=\"l\""
          << (a.corrupts ? " style=\"color:#c0392b;font-weight:bold\"" : "") << ">" << esc(a.advice)
          << "</td></tr>\n";
      }
    o << "</table>\n";
  }

  o << "<h2>Findings</h2>\n";
  if (r.groups.empty()) o << "<p>No findings.</p>\n";
  for (size_t gi = 0; gi < r.groups.size(); ++gi) {
    const FindingGroup& g = r.groups[gi];
    const Finding& f = r.findings[g.lead];
    std::string every;
    for (int c : g.every_call) every += (every.empty() ? "" : " ") + std::to_string(c);
    o << "<div class=\"finding " << severity_name(g.severity) << "\" id=\"group-" << gi + 1
      << "\" data-calls=\"" << every << "\" data-check=\"" << esc(f.check) << "\" data-status=\""
      << finding_status_name(g.status) << "\" data-findings=\"" << g.members.size() << "\">\n<b>"
      << severity_name(g.severity) << "[" << esc(f.check) << "]</b>"
      << (g.status != FindingStatus::active
              ? std::string(" (") + finding_status_name(g.status) + ")"
              : "")
      << ": " << esc(f.message) << "<br>\n<small>" << esc(r.location(f.path));
    if (f.call)
      o << " &middot; call " << f.call << " (" << esc(f.phase) << ") kernel " << esc(f.kernel)
        << ", bo_key '" << esc(f.bo_key) << "'"
        << (f.ns.empty() ? "" : " of cache '" + esc(f.ns) + "'");
    if (!g.every_call.empty())
      o << " &middot; <a href=\"#group-" << gi + 1 << "\">seen on " << g.every_call.size()
        << " call(s)</a>";
    o << "</small>\n";
    if (g.members.size() > 1) {
      std::vector<std::string> cs;
      for (int c : g.calls) cs.push_back(std::to_string(c));
      o << "<br><small>one cause, " << g.members.size() << " findings: slots "
        << esc(name_list(g.slots, 12)) << "; bo_keys " << esc(name_list(g.bo_keys, 6)) << "; calls "
        << esc(name_list(cs, 12)) << "</small>\n";
    }
    o << "<div class=\"ev\">";
    for (auto& [k, v] : f.evidence) o << esc(k) << ": " << esc(v) << "\n";
    o << "</div><b>Fix:</b> " << esc(f.fix) << "\n</div>\n";
  }
  o << "<script type=\"application/json\" id=\"data\">" << script_json(data) << "</script>\n"
    << "<script>" << kScript << "</script>\n</body></html>\n";
  return o.str();
}

}  // namespace bod
