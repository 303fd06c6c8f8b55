'use strict';
// Calls a server's AdminService (Connect JSON on the RPC port) the way a
// dashboard does: log in, then create, read and update projects. It uses
// node:http, not fetch, so the record of the SDK's calls stays the SDK's.

const http = require('node:http');

/**
 * POSTs a Connect JSON unary call; resolves with { status, body } (body
 * parsed). `authorization`, when given, is sent instead of the token.
 */
function connectCall(rpcAddr, service, method, message, token, authorization) {
  const url = new URL(`${rpcAddr}/yorkie.v1.${service}/${method}`);
  const payload = JSON.stringify(message);
  const headers = { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (authorization) headers.Authorization = authorization;
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => {
        let body = null;
        try {
          body = JSON.parse(text);
        } catch {
          body = { raw: text };
        }
        resolve({ status: res.statusCode, body });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** An AdminService session of the default admin account (admin/admin unless given). */
class ProjectAdmin {
  constructor(rpcAddr, token) {
    this.rpcAddr = rpcAddr;
    this.token = token;
  }

  static async logIn(rpcAddr, { username = 'admin', password = 'admin' } = {}) {
    const { status, body } = await connectCall(rpcAddr, 'AdminService', 'LogIn', { username, password });
    if (status !== 200) throw new Error(`LogIn: ${status} ${JSON.stringify(body)}`);
    return new ProjectAdmin(rpcAddr, body.token);
  }

  async call(method, message) {
    const { status, body } = await connectCall(this.rpcAddr, 'AdminService', method, message, this.token);
    if (status !== 200) throw new Error(`${method}: ${status} ${JSON.stringify(body)}`);
    return body;
  }

  /** The project named `name` (the default project is 'default'). */
  async project(name = 'default') {
    return (await this.call('GetProject', { name })).project;
  }

  /** Sets `fields` (UpdatableProjectFields in JSON form) of the project named `name`. */
  async update(name, fields) {
    const p = await this.project(name);
    return (await this.call('UpdateProject', { id: p.id, fields })).project;
  }
}

module.exports = { ProjectAdmin, connectCall };
