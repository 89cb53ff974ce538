// A node added near the right edge of the canvas must not stay under the inspector that opens for it, even when the
// canvas no longer draws it (only nodes on screen are mounted).
import { afterEach, describe, expect, it } from "vitest";
import { revealNow } from "./reveal";

function canvas(rect: { left: number; top: number; width: number; height: number }) {
  const pane = document.createElement("div");
  pane.className = "react-flow";
  pane.getBoundingClientRect = () => ({ ...rect, x: rect.left, y: rect.top, right: rect.left + rect.width, bottom: rect.top + rect.height, toJSON: () => rect });
  document.body.appendChild(pane);
}

function flowWith(position: { x: number; y: number }, zoom = 1) {
  const moves: { x: number; y: number; zoom: number }[] = [];
  let viewport = { x: 0, y: 0, zoom };
  const flow = {
    getViewport: () => viewport,
    setViewport: async (v: typeof viewport) => {
      moves.push(v);
      viewport = v;
      return true;
    },
    getNode: (id: string) => (id === "agent" ? { id, position, measured: { width: 220, height: 84 }, data: {} } : undefined),
  };
  return { flow: flow as unknown as Parameters<typeof revealNow>[0], moves };
}

afterEach(() => {
  document.body.innerHTML = "";
});

describe("a node added near the right edge", () => {
  it("is brought into view when the canvas narrowed over it and no longer draws its card", () => {
    canvas({ left: 68, top: 40, width: 700, height: 500 }); // the inspector took the right 300 px
    const { flow, moves } = flowWith({ x: 780, y: 100 }); // wholly under the inspector: no card in the page
    expect(document.querySelector(".react-flow__node")).toBeNull();
    revealNow(flow, "agent");
    expect(moves).toHaveLength(1);
    const left = 68 + moves[0].x + 780;
    expect(left + 220, "its right edge is inside the canvas with the margin").toBe(68 + 700 - 24);
    expect(moves[0]).toMatchObject({ y: 0, zoom: 1 });
  });

  it("leaves the view alone when the node is already whole in view", () => {
    canvas({ left: 68, top: 40, width: 700, height: 500 });
    const { flow, moves } = flowWith({ x: 200, y: 100 });
    revealNow(flow, "agent");
    expect(moves).toEqual([]);
  });

  it("counts the zoom", () => {
    canvas({ left: 0, top: 0, width: 700, height: 500 });
    const { flow, moves } = flowWith({ x: 1000, y: 100 }, 0.5); // on screen at 500..610
    revealNow(flow, "agent");
    expect(moves).toEqual([]);
  });
});
