#include "xclbin_writer.h"

#include <xclbin.h>  // axlf layout (Debian: /usr/include/xrt/xclbin.h)

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <utility>

namespace bod::testutil {
namespace {

constexpr const char* kInstance = "cu";  // one compute unit per kernel: "<kernel>:cu"
constexpr uint64_t kCuStride = 0x10000;  // AXI-lite window of each compute unit

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// One <arg>: addressQualifier 0 = scalar on the control port, 1 = global buffer on the master.
std::string xml_arg(int id, const std::string& name, bool global, int offset, const char* type) {
  char b[512];
  std::snprintf(b, sizeof b,
                "<arg name=\"%s\" addressQualifier=\"%d\" id=\"%d\" port=\"%s\" size=\"0x8\" "
                "offset=\"0x%x\" hostOffset=\"0x0\" hostSize=\"0x8\" type=\"%s\"/>",
                name.c_str(), global ? 1 : 0, id, global ? "M_AXI_GMEM" : "S_AXI_CONTROL", offset,
                type);
  return b;
}

std::string metadata_xml(const std::vector<NoopKernelSpec>& kernels) {
  std::string s =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
      "<project name=\"bod_noop\"><platform vendor=\"bod\" boardid=\"noop\" name=\"noop\">"
      "<device name=\"noop\"><core name=\"OCL_REGION_0\" type=\"clc_region\">";
  for (size_t k = 0; k < kernels.size(); ++k) {
    const std::string name = xml_escape(kernels[k].name);
    s += "<kernel name=\"" + name + "\" language=\"c\" vlnv=\"bod:noop:" + name +
         ":1.0\" preferredWorkGroupSizeMultiple=\"0\" workGroupSize=\"1\" interrupt=\"true\" "
         "hwControlProtocol=\"ap_ctrl_hs\">"
         "<port name=\"S_AXI_CONTROL\" mode=\"slave\" range=\"0x1000\" dataWidth=\"32\" "
         "portType=\"addressable\" base=\"0x0\"/>"
         "<port name=\"M_AXI_GMEM\" mode=\"master\" range=\"0xFFFFFFFFFFFFFFFF\" "
         "dataWidth=\"32\" portType=\"addressable\" base=\"0x0\"/>";
    int offset = 0x10;
    s += xml_arg(0, "opcode", false, offset, "uint64_t");
    offset += 8;
    s += xml_arg(1, "instr", true, offset, "char*");
    offset += 8;
    s += xml_arg(2, "ninstr", false, offset, "uint32_t");
    offset += 8;
    for (int i = 0; i < kernels[k].n_bo_args; ++i) {
      s += xml_arg(3 + i, "bo" + std::to_string(i), true, offset, "void*");
      offset += 8;
    }
    char inst[160];
    std::snprintf(inst, sizeof inst,
                  "<instance name=\"%s\"><addrRemap base=\"0x%llx\" range=\"0x%llx\" "
                  "port=\"S_AXI_CONTROL\"/></instance>",
                  kInstance, static_cast<unsigned long long>(k * kCuStride),
                  static_cast<unsigned long long>(kCuStride));
    s += inst;
    s += "</kernel>";
  }
  s += "</core></device></platform></project>";
  return s;
}

template <typename T>
T* section_as(std::vector<char>& bytes) {
  return reinterpret_cast<T*>(bytes.data());
}

std::vector<char> mem_topology_section() {
  std::vector<char> bytes(sizeof(mem_topology) + sizeof(mem_data), 0);  // two banks
  auto* mt = section_as<mem_topology>(bytes);
  mt->m_count = 2;
  const char* tags[2] = {"instr", "bos"};
  for (int i = 0; i < 2; ++i) {
    mem_data& m = mt->m_mem_data[i];
    m.m_type = MEM_DDR4;
    m.m_used = 1;
    m.m_size = 1 << 20;  // KB
    m.m_base_address = static_cast<uint64_t>(i) << 32;
    std::strncpy(reinterpret_cast<char*>(m.m_tag), tags[i], sizeof m.m_tag - 1);
  }
  return bytes;
}

std::vector<char> ip_layout_section(const std::vector<NoopKernelSpec>& kernels) {
  const size_t n = kernels.size();
  std::vector<char> bytes(sizeof(ip_layout) + (n - 1) * sizeof(ip_data), 0);
  auto* il = section_as<ip_layout>(bytes);
  il->m_count = static_cast<int32_t>(n);
  for (size_t k = 0; k < n; ++k) {
    ip_data& ip = il->m_ip_data[k];
    ip.m_type = IP_KERNEL;
    ip.properties = 0;
    ip.m_base_address = k * kCuStride;
    const std::string cu = kernels[k].name + ":" + kInstance;
    if (cu.size() >= sizeof ip.m_name)
      throw std::invalid_argument("build_noop_xclbin: kernel name '" + kernels[k].name +
                                  "' is too long for an xclbin IP name");
    std::memcpy(ip.m_name, cu.c_str(), cu.size() + 1);
  }
  return bytes;
}

std::vector<char> connectivity_section(const std::vector<NoopKernelSpec>& kernels) {
  std::vector<connection> conns;
  for (size_t k = 0; k < kernels.size(); ++k) {
    const auto ip = static_cast<int32_t>(k);
    conns.push_back({1, ip, kNoopInstrGroup});
    for (int i = 0; i < kernels[k].n_bo_args; ++i) conns.push_back({3 + i, ip, kNoopSlotGroup});
  }
  std::vector<char> bytes(sizeof(connectivity) + (conns.size() - 1) * sizeof(connection), 0);
  auto* cn = section_as<connectivity>(bytes);
  cn->m_count = static_cast<int32_t>(conns.size());
  std::memcpy(cn->m_connection, conns.data(), conns.size() * sizeof(connection));
  return bytes;
}

// FNV-1a over the kernel specs: a stable uuid per distinct image.
void fill_uuid(const std::vector<NoopKernelSpec>& kernels, unsigned char out[16]) {
  uint64_t h[2] = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull};
  for (int part = 0; part < 2; ++part) {
    auto mix = [&](unsigned char c) {
      h[part] ^= c;
      h[part] *= 0x100000001b3ull;
    };
    for (const auto& k : kernels) {
      for (char c : k.name) mix(static_cast<unsigned char>(c));
      mix(0);
      for (int b = 0; b < 4; ++b) mix(static_cast<unsigned char>(k.n_bo_args >> (8 * b)));
    }
  }
  std::memcpy(out, &h[0], 8);
  std::memcpy(out + 8, &h[1], 8);
}

size_t align8(size_t n) {
  return (n + 7) / 8 * 8;
}

}  // namespace

std::vector<char> build_noop_xclbin(const std::vector<NoopKernelSpec>& kernels) {
  if (kernels.empty()) throw std::invalid_argument("build_noop_xclbin: no kernels");
  for (const auto& k : kernels)
    if (k.name.empty() || k.n_bo_args < 0)
      throw std::invalid_argument("build_noop_xclbin: kernel needs a name and n_bo_args >= 0");

  const std::string xml = metadata_xml(kernels);
  std::vector<std::pair<axlf_section_kind, std::vector<char>>> sections;
  sections.emplace_back(EMBEDDED_METADATA, std::vector<char>(xml.begin(), xml.end()));
  sections.emplace_back(MEM_TOPOLOGY, mem_topology_section());
  sections.emplace_back(IP_LAYOUT, ip_layout_section(kernels));
  sections.emplace_back(CONNECTIVITY, connectivity_section(kernels));

  const size_t header = align8(sizeof(axlf) + (sections.size() - 1) * sizeof(axlf_section_header));
  size_t total = header;
  for (const auto& s : sections) total += align8(s.second.size());

  std::vector<char> image(total, 0);
  auto* top = reinterpret_cast<axlf*>(image.data());
  std::memcpy(top->m_magic, "xclbin2", 8);
  top->m_signature_length = -1;
  std::memset(top->reserved, 0xFF, sizeof top->reserved);
  top->m_header.m_length = total;
  top->m_header.m_versionMajor = 2;
  top->m_header.m_mode = XCLBIN_FLAT;
  top->m_header.m_numSections = static_cast<uint32_t>(sections.size());
  std::strncpy(reinterpret_cast<char*>(top->m_header.m_platformVBNV), "bod:noop:noop:1.0",
               sizeof top->m_header.m_platformVBNV - 1);
  fill_uuid(kernels, reinterpret_cast<unsigned char*>(&top->m_header.uuid));

  size_t offset = header;
  for (size_t i = 0; i < sections.size(); ++i) {
    axlf_section_header& sh = top->m_sections[i];
    sh.m_sectionKind = sections[i].first;
    std::snprintf(sh.m_sectionName, sizeof sh.m_sectionName, "s%u", static_cast<unsigned>(i % 100));
    sh.m_sectionOffset = offset;
    sh.m_sectionSize = sections[i].second.size();
    std::memcpy(image.data() + offset, sections[i].second.data(), sections[i].second.size());
    offset += align8(sections[i].second.size());
  }
  return image;
}

std::vector<char> build_noop_xclbin(const std::string& kernel, int n_bo_args) {
  return build_noop_xclbin(std::vector<NoopKernelSpec>{{kernel, n_bo_args}});
}

bool write_noop_xclbin(const std::string& path, const std::vector<NoopKernelSpec>& kernels) {
  const std::vector<char> image = build_noop_xclbin(kernels);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return false;
  f.write(image.data(), static_cast<std::streamsize>(image.size()));
  return static_cast<bool>(f.flush());
}

bool write_noop_xclbin(const std::string& path, const std::string& kernel, int n_bo_args) {
  return write_noop_xclbin(path, std::vector<NoopKernelSpec>{{kernel, n_bo_args}});
}

}  // namespace bod::testutil
